/** TypeBox schemas shared by every domain's routes. */
import { type TInteger, type TObject, type TSchema, Type } from 'typebox';

export const ErrorBody = Type.Object(
  {
    detail: Type.Union([
      Type.String(),
      Type.Array(
        Type.Object({
          loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
          msg: Type.String(),
          type: Type.String(),
        }),
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

/** Timestamps leave as ISO 8601 strings (fast-json-stringify formats `Date` values for `date-time`). */
export const Timestamp = Type.String({ format: 'date-time' });
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

/** `schema` or null. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** A JSON object with any fields (settings, preferences…). */
export const OpenObject = Type.Object({}, { additionalProperties: true });

/** A database id (ids are 32-bit `integer` columns: a larger value could never match and would fail in SQL). */
export const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });

/** A path parameter holding a database id. */
export function IdParam<K extends string>(name: K): TObject<Record<K, TInteger>> {
  return Type.Object({ [name]: Id } as Record<K, TInteger>);
}

/** JSON form of a timestamp column. */
export function iso(value: Date): string;
export function iso(value: Date | null): string | null;
export function iso(value: Date | null): string | null {
  return value === null ? null : value.toISOString();
}

export const MessageBody = Type.Object({ message: Type.String() });
