/** The JSON of a customer's cloud function in the function list: the TypeBox schemas and the function that fills one. */
import { Type } from 'typebox';
import type { CloudFunction } from '../../providers/cloud/functions.js';

const FunctionOut = Type.Object(
  {
    function_name: Type.String({ description: 'The name used for invocation.' }),
    description: Type.String({ description: 'May be empty.' }),
    runtime: Type.String({ description: 'Empty for container-image functions.' }),
    timeout: Type.Integer({ description: 'Seconds.' }),
    memory_size: Type.Integer({ description: 'MB.' }),
    code_size: Type.Integer({ description: 'Bytes.' }),
    handler: Type.String({ description: 'Empty for container-image functions.' }),
    version: Type.String({ description: 'Usually `$LATEST`.' }),
    last_modified: Type.String({ description: 'ISO 8601 timestamp.' }),
  },
  { title: 'ServerlessFunction' },
);

export const ListOut = Type.Object(
  {
    success: Type.Literal(true),
    message: Type.String(),
    functions: Type.Array(FunctionOut),
  },
  { title: 'ServerlessFunctionList' },
);

export function functionView(fn: CloudFunction) {
  return {
    function_name: fn.name,
    description: fn.description,
    runtime: fn.runtime,
    timeout: fn.timeoutSeconds,
    memory_size: fn.memoryMb,
    code_size: fn.codeSizeBytes,
    handler: fn.handler,
    version: fn.version,
    last_modified: fn.lastModified,
  };
}
