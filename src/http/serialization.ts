/**
 * Response serialization: Fastify's own (fast-json-stringify, which writes a reply by its route's
 * response schema, dropping fields the schema does not name), with each route's serializer compiled
 * when the route first answers with that status instead of at start-up. Compiling the serializers of
 * every route took about a third of the app's start-up; a process usually serves a fraction of its
 * routes soon after it starts (the validators are compiled the same way, validation.ts).
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type SerializerFactory = ReturnType<typeof SerializerSelector>;

/** Fastify's `schemaController.compilersFactory.buildSerializer`. */
export const buildSerializerOnFirstUse: SerializerFactory = (externalSchemas, options) => {
  const compile = SerializerSelector()(externalSchemas, options);
  return (route) => {
    let serialize: ((payload: unknown) => string) | undefined;
    return (payload) => {
      serialize ??= compile(route);
      return serialize(payload);
    };
  };
};
