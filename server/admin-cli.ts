/**
 * `patient-docs-admin`: what the admin API does, from a shell on the server machine. It works on
 * the same database as the server (same PATIENT_DOCS_DATA_DIR / PATIENT_DOCS_DATABASE_URL), so it
 * needs no admin token: access to the data directory is the authority.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import { createContext } from './context.js';
import { ApiError } from './errors.js';
import { readSeedFile } from './start.js';

const USAGE = `Usage: patient-docs-admin <command> [options]

  organization add --name NAME [--id UUID]
  organization list
  patient add --name NAME [--id UUID] [--organization UUID ...] [--consent UUID ...]
  patient show --id UUID
  patient update --id UUID [--name NAME] [--organization UUID ...] [--consent UUID ...]
  consent grant --patient UUID --organization UUID
  consent revoke --patient UUID --organization UUID
  client add --name NAME --scope SCOPE ... --organization UUID ... [--client-id ID]
             (the secret is generated and printed once)
  client list
  order add --patient UUID --organization UUID --status STATUS
  order update --id UUID --status STATUS
  seed --file seed.json
  keys rotate            new signing key; the old one keeps verifying until pruned
  keys prune [--overlap SECONDS]   drop keys retired longer ago than the token lifetime
  keys list

Environment: PATIENT_DOCS_DATA_DIR, PATIENT_DOCS_DATABASE_URL (as for the server).`;

const OPTIONS = {
  name: { type: 'string' },
  id: { type: 'string' },
  organization: { type: 'string', multiple: true },
  consent: { type: 'string', multiple: true },
  patient: { type: 'string' },
  scope: { type: 'string', multiple: true },
  'client-id': { type: 'string' },
  status: { type: 'string' },
  file: { type: 'string' },
  overlap: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function required(value: string | undefined, flag: string): string {
  if (!value) throw new UsageError(`--${flag} is required`);
  return value;
}

class UsageError extends Error {}

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const [area, action] = positionals;
  if (values.help || !area) return USAGE;
  const config = loadConfig();
  const context = await createContext(config);
  const { directory, keys } = context;
  try {
    switch (`${area} ${action ?? ''}`.trim()) {
      case 'organization add':
        return (await directory.upsertOrganization({ id: values.id, name: required(values.name, 'name') })).organization;
      case 'organization list':
        return await directory.listOrganizations();
      case 'patient add':
        return await directory.createPatient({ id: values.id, name: required(values.name, 'name'), organizations: values.organization, consents: values.consent });
      case 'patient show':
        return await directory.getPatient(required(values.id, 'id'));
      case 'patient update':
        return await directory.updatePatient(required(values.id, 'id'), { name: values.name, organizations: values.organization, consents: values.consent });
      case 'consent grant':
      case 'consent revoke':
        return await directory.setConsent(required(values.patient, 'patient'), required(values.organization?.[0], 'organization'), action === 'grant');
      case 'client add':
        return await directory.createClient({
          clientId: values['client-id'],
          name: required(values.name, 'name'),
          scopes: values.scope ?? [],
          organizations: values.organization ?? [],
        });
      case 'client list':
        return await directory.listClients();
      case 'order add':
        return await directory.createOrder({
          patientId: required(values.patient, 'patient'),
          organizationId: required(values.organization?.[0], 'organization'),
          status: required(values.status, 'status'),
        });
      case 'order update':
        return await directory.updateOrder(required(values.id, 'id'), required(values.status, 'status'));
      case 'seed':
        return await directory.applySeed(readSeedFile(required(values.file, 'file')));
      case 'keys rotate':
        return { kid: await keys.rotate(), note: 'new tokens are signed with this key; tokens signed before keep verifying until `keys prune`' };
      case 'keys prune':
        return { removed: await keys.prune(values.overlap ? Number(values.overlap) : config.tokenLifetimeSeconds) };
      case 'keys list':
        return (await context.store.signingKeys.list()).map(({ kid, createdAt, retiredAt }) => ({ kid, createdAt, retiredAt }));
      default:
        throw new UsageError(`unknown command: ${positionals.join(' ')}`);
    }
  } finally {
    await context.store.close();
  }
}

run(process.argv.slice(2)).then(
  (result) => {
    console.log(typeof result === 'string' ? result : JSON.stringify(result, null, 2));
  },
  (error: unknown) => {
    if (error instanceof UsageError || (error instanceof TypeError && 'code' in error)) {
      console.error(`patient-docs-admin: ${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    if (error instanceof ConfigError) {
      console.error(`patient-docs-admin: ${error.message}`);
      process.exit(2);
    }
    if (error instanceof ApiError) {
      console.error(`patient-docs-admin: ${error.detail}`);
      process.exit(1);
    }
    console.error('patient-docs-admin:', error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
