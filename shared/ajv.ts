/**
 * One way to build a JSON-Schema validator with string formats (uuid, date-time, …), for the
 * server's routes and seed file and for the bridge's payload checks alike.
 */
import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { isDisplayName } from './names.js';
import { isBirthDate, isIdentifierFilter, isIdentifierSystem, isIdentifierValue } from './patient-identifiers.js';

type AddFormats = (ajv: Ajv) => Ajv;
// ajv-formats is CommonJS: under NodeNext its default export arrives wrapped.
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as unknown as AddFormats;

/** A bare UUID. ajv-formats' `uuid` also takes a `urn:uuid:` prefix, which no lookup then finds. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Our own string formats, next to (and in place of) ajv-formats' standard ones. */
const FORMATS = {
  'display-name': isDisplayName,
  uuid: (value: string) => UUID.test(value),
  'identifier-system': isIdentifierSystem,
  'identifier-value': isIdentifierValue,
  'identifier-filter': isIdentifierFilter,
  'birth-date': (value: string) => isBirthDate(value),
};

/** Failed format checks in plain words, instead of ajv's 'must match format "uuid"'. */
const FORMAT_RULES: Record<string, string> = {
  uuid: 'must be a UUID',
  'display-name': 'must not be blank or contain control characters',
  'identifier-system': 'must be 1–64 characters without "|", control characters or spaces at either end',
  'identifier-value': 'must be 1–128 characters without control characters or spaces at either end',
  'identifier-filter': 'must be system|value (e.g. chart|10231): a system of 1–64 characters without "|", a value of 1–128, neither blank nor with spaces at either end',
  'birth-date': 'must be a date YYYY-MM-DD that exists, from 1850-01-01 to today',
  'date-time': 'must be an ISO 8601 date and time with a time zone, e.g. 2026-11-21T09:30:00Z',
};

/** The rule an ajv error states, as the second half of "body/name …". */
export function ruleOf(error: ErrorObject | undefined): string {
  if (!error) return 'is invalid';
  if (error.keyword === 'format') return FORMAT_RULES[String(error.params.format)] ?? error.message ?? 'is invalid';
  // Name the values, not "must be equal to one of the allowed values".
  if (error.keyword === 'enum') return `must be one of ${(error.params.allowedValues as unknown[]).map((value) => JSON.stringify(value)).join(', ')}`;
  if (error.keyword === 'const') return `must be ${JSON.stringify(error.params.allowedValue)}`;
  if (error.keyword === 'additionalProperties') return `must not have the key ${JSON.stringify(error.params.additionalProperty)}`;
  return error.message ?? 'is invalid';
}

export function createAjv(options: Options = {}): Ajv {
  const ajv = new Ajv({ strict: false, allErrors: false, ...options });
  addFormats(ajv);
  for (const [name, validate] of Object.entries(FORMATS)) ajv.addFormat(name, { type: 'string', validate });
  return ajv;
}
