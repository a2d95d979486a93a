/**
 * One way to build a JSON-Schema validator with string formats (uuid, date-time, …), for the
 * server's routes and seed file and for the bridge's payload checks alike.
 */
import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';

type AddFormats = (ajv: Ajv) => Ajv;
// ajv-formats is CommonJS: under NodeNext its default export arrives wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as unknown as AddFormats;

export function createAjv(options: Options = {}): Ajv {
  const ajv = new Ajv({ strict: false, allErrors: false, ...options });
  addFormats(ajv);
  return ajv;
}
