/**
 * The bundled server run in-process ("this computer runs the server"): embedded SQLite and file
 * storage under the sync home, and on first start a demo organization, patient and client, so a
 * new user sees a folder sync end to end at once. The client secret goes to the SecretStore;
 * the seed file that carried it is removed once applied.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { EmbeddedServerHost, EmbeddedServerInfo } from '../sync/app/sync-app.js';
import { EMBEDDED_DATA_FOLDER } from '../sync/home/home-state.js';
import type { SecretStore } from '../sync/home/secrets.js';
import { ConfigError, loadConfig, type ServerConfig } from '../../server/config.js';
import { startServer, type RunningServer } from '../../server/start.js';

const DEMO_FILE = 'embedded-server.json';
const SECRET_ACCOUNT = 'embedded-client-secret';
const DEMO_CLIENT_ID = 'this-computer';

interface DemoIdentity {
  organizationId: string;
  organizationName: string;
  patient: { id: string; name: string };
  clientId: string;
}

export class EmbeddedServer implements EmbeddedServerHost {
  private running: RunningServer | undefined;

  constructor(
    private readonly home: string,
    private readonly secrets: SecretStore,
  ) {}

  async start(preferredUrl?: string): Promise<EmbeddedServerInfo> {
    const dataDir = path.join(this.home, EMBEDDED_DATA_FOLDER);
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const identityFile = path.join(this.home, DEMO_FILE);
    let identity = existsSync(identityFile) ? (JSON.parse(readFileSync(identityFile, 'utf8')) as DemoIdentity) : undefined;
    let clientSecret = await this.secrets.get(SECRET_ACCOUNT);
    let seedFile: string | undefined;
    if (!identity || !clientSecret) {
      identity ??= {
        organizationId: randomUUID(),
        organizationName: 'My Clinic',
        patient: { id: randomUUID(), name: 'Demo Patient' },
        clientId: DEMO_CLIENT_ID,
      };
      clientSecret = randomBytes(24).toString('base64url');
      await this.secrets.set(SECRET_ACCOUNT, clientSecret);
      seedFile = path.join(dataDir, `seed-${randomUUID()}.json`);
      writeFileSync(seedFile, JSON.stringify(seedFor(identity, clientSecret)), { mode: 0o600 });
      writeFileSync(identityFile, JSON.stringify(identity, null, 2), { mode: 0o600 });
    }
    try {
      this.running = await this.listen(dataDir, preferredPort(preferredUrl), seedFile);
    } finally {
      if (seedFile) rmSync(seedFile, { force: true });
    }
    return {
      url: this.running.url,
      tokenUrl: `${this.running.url}/oauth2/token`,
      clientId: identity.clientId,
      clientSecret,
      organizationId: identity.organizationId,
      organizationName: identity.organizationName,
      demoPatient: identity.patient,
    };
  }

  async stop(): Promise<void> {
    await this.running?.close();
    this.running = undefined;
  }

  private async listen(dataDir: string, port: number, seedFile: string | undefined): Promise<RunningServer> {
    const env = {
      // The same PATIENT_DOCS_* settings as `npm run server` (an upload limit, say), apart from those this mode decides.
      ...serverSettingsFrom(process.env),
      HOST: '127.0.0.1',
      PORT: String(port),
      PATIENT_DOCS_DATA_DIR: dataDir,
      PATIENT_DOCS_LOG_LEVEL: process.env.PATIENT_DOCS_LOG_LEVEL ?? 'warn',
      // The app's own webhook listener is on this computer (loopback): the one callback it may reach.
      PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true',
      ...(seedFile ? { PATIENT_DOCS_SEED: seedFile } : {}),
    };
    try {
      return await startServer(embeddedConfig(env), { logger: false });
    } catch (error) {
      // Last launch's port is taken now: any free port will do (the app updates its settings).
      if (error instanceof ConfigError && port !== 0 && /in use/.test(error.message)) return startServer(embeddedConfig({ ...env, PORT: '0' }), { logger: false });
      throw error;
    }
  }
}

/**
 * The embedded server honours the server's PATIENT_DOCS_* variables (docs/workstation.md, "The
 * embedded server's settings"),
 * except those the app decides for it: where it listens
 * and is reached (127.0.0.1 and its port, its public URL), where its data and database live (the
 * sync home), its seed (the demo clinic) and whether it may call this computer back.
 */
/** The server's settings from the environment, plus plain http to the app's own loopback listener. */
function embeddedConfig(env: Record<string, string | undefined>): ServerConfig {
  return { ...loadConfig(env), allowLoopbackHttpCallbacks: true };
}

const DECIDED_BY_THE_APP = new Set(['PATIENT_DOCS_DATA_DIR', 'PATIENT_DOCS_DATABASE_URL', 'PATIENT_DOCS_PUBLIC_URL', 'PATIENT_DOCS_SEED', 'PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS']);

export function serverSettingsFrom(environment: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(environment).filter((entry): entry is [string, string] => entry[0].startsWith('PATIENT_DOCS_') && !DECIDED_BY_THE_APP.has(entry[0]) && entry[1] !== undefined),
  );
}

function preferredPort(url: string | undefined): number {
  if (!url) return 0;
  try {
    const parsed = new URL(url);
    return parsed.hostname === '127.0.0.1' && parsed.port ? Number(parsed.port) : 0;
  } catch {
    return 0;
  }
}

function seedFor(identity: DemoIdentity, clientSecret: string) {
  return {
    organizations: [{ id: identity.organizationId, name: identity.organizationName }],
    patients: [{ id: identity.patient.id, name: identity.patient.name, organizations: [identity.organizationId], consents: [identity.organizationId] }],
    clients: [
      {
        clientId: identity.clientId,
        clientSecret,
        name: 'This computer',
        scopes: ['Patient.File.Read', 'Patient.File.Write', 'Patient.Read', 'Webhook.Manage'],
        organizations: [identity.organizationId],
      },
    ],
  };
}
