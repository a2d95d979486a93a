/**
 * One way to build a JSON-Schema validator with string formats (uuid, date-time, …), for the
 * server's routes and seed file and for the bridge's payload checks alike.
 */
import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { isDisplayName } from './names.js';

type AddFormats = (ajv: Ajv) => Ajv;
// ajv-formats is CommonJS: under NodeNext its default export arrives wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as unknown as AddFormats;

/** Our own string formats, next to ajv-formats' standard ones. */
const FORMATS = { 'display-name': isDisplayName };

/** What a failed format check means, as the second half of "body/name …". */
export function formatRule(format: unknown): string | undefined {
  if (format === 'uuid') return 'must be a UUID';
  if (format === 'display-name') return 'must not be blank or contain control characters';
  return undefined;
}

export function createAjv(options: Options = {}): Ajv {
  const ajv = new Ajv({ strict: false, allErrors: false, ...options });
  addFormats(ajv);
  for (const [name, validate] of Object.entries(FORMATS)) ajv.addFormat(name, { type: 'string', validate });
  return ajv;
}
