/**
 * TypeBox schemas of the HTTP face shared by every domain's routes: the error envelopes, ids in paths.
 * Schema helpers that views and domain schemas use too are in lib/schema.ts.
 */
import { type TInteger, type TObject, Type } from 'typebox';

export const ErrorBody = Type.Object(
  {
    detail: Type.Union([
      Type.String(),
      Type.Array(
        Type.Object(
          {
            loc: Type.Array(Type.Union([Type.String(), Type.Integer()]), {
              description: 'Where: `body`, `query`, `path` or `header`, then field names and array indexes',
            }),
            msg: Type.String(),
            type: Type.String({ description: 'A short error kind, e.g. `missing`, `string_too_long`' }),
          },
          { title: 'ValidationError', description: 'One invalid input value.' },
        ),
      ),
    ]),
  },
  { title: 'ErrorBody', description: 'Error envelope: a message, or a list of validation issues.' },
);

/** The envelope of operations that add `success: false` and a `message` (the serverless listing). */
export const SuccessFlagErrorBody = Type.Object(
  {
    success: Type.Literal(false),
    detail: ErrorBody.properties.detail,
    message: Type.String({ description: 'The detail as one line of text.' }),
  },
  { title: 'SuccessFlagErrorBody', description: 'Error envelope with `success: false` and a message.' },
);

/** A database id (ids are 32-bit `integer` columns: a larger value could never match and would fail in SQL). */
export const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });

/** A path parameter holding a database id. */
export function IdParam<K extends string>(name: K): TObject<Record<K, TInteger>> {
  return Type.Object({ [name]: Id } as Record<K, TInteger>);
}

export const MessageBody = Type.Object({ message: Type.String() });
