/**
 * Reading and checking a seed file (DESIGN §2), apart from directory.ts: the check needs the admin
 * API's body schemas and a validator, which only seeding loads.
 */
import fs from 'node:fs';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { createAjv, ruleOf } from '../../shared/ajv.js';
import { SeedFile } from '../../shared/schemas.js';
import { SeedError } from './directory.js';

/** Where a seed read by readSeedFile came from, for applySeed's errors. */
const seedSources = new WeakMap<object, string>();

export function seedSource(seed: object): string | undefined {
  return seedSources.get(seed);
}

/** Reads and checks a seed file; `source` names it in errors (the variable, or the CLI's flag). */
export function readSeedFile(file: string, source = 'PATIENT_DOCS_SEED'): SeedFile {
  const label = `${source}=${file}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new SeedError(`${label} cannot be read as JSON: ${(error as Error).message}`);
  }
  const seed = checkSeedShape(parsed, label);
  seedSources.set(seed, label);
  return seed;
}

let validateSeed: ValidateFunction | undefined;

/** The seed file's schema (each entry by the admin API's body schema, no unknown keys), as one line. */
export function checkSeedShape(value: unknown, label: string): SeedFile {
  // The schema is ours (TypeBox's output, checked by the tests), not checked against JSON Schema's
  // meta-schema at each start: compiling that meta-schema is half of the check's tenth of a second.
  validateSeed ??= createAjv({ coerceTypes: false, removeAdditional: false, verbose: true, validateSchema: false }).compile(SeedFile);
  if (validateSeed(value)) return value as SeedFile;
  throw new SeedError(`${label} is invalid: ${describeSeedError(validateSeed.errors?.[0])}`);
}

function describeSeedError(error: ErrorObject | undefined): string {
  const at = error?.instancePath || '/';
  if (error?.keyword === 'additionalProperties') {
    const known = Object.keys((error.parentSchema as { properties?: object } | undefined)?.properties ?? {});
    return `${error.instancePath}/${String(error.params.additionalProperty)} is not a known key (known: ${known.join(', ')})`;
  }
  return `${at} ${ruleOf(error)}`;
}
