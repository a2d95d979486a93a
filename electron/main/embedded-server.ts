/**
 * "This computer runs the server": the bundled server in-process on its embedded defaults, with a
 * demo organization, patient and scanner client so a new user sees a folder sync at once.
 * The client secret is generated on first start and kept (0600) beside the server's own data.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { EmbeddedServerHost, EmbeddedServerInfo } from '../sync/sync-app.js';
import { loadConfig } from '../../server/config.js';
import { startServer, type RunningServer } from '../../server/start.js';

export const DEMO = {
  organization: { id: '3f6d2a10-8c1e-4d5b-9f0a-6b7c8d9e0a01', name: 'Demo Clinic' },
  patient: { id: '3f6d2a10-8c1e-4d5b-9f0a-6b7c8d9e0b01', name: 'Demo Patient' },
  clientId: 'this-computer',
} as const;

function demoSecret(dataDir: string): string {
  const file = path.join(dataDir, 'demo-client.json');
  if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { clientSecret: string }).clientSecret;
  const clientSecret = randomBytes(24).toString('base64url');
  writeFileSync(file, JSON.stringify({ clientId: DEMO.clientId, clientSecret }), { mode: 0o600 });
  return clientSecret;
}

function portOf(url: string | undefined): number {
  if (!url) return 0;
  try {
    return Number(new URL(url).port) || 0;
  } catch {
    return 0;
  }
}

export function createEmbeddedServerHost(dataDir: string, extraEnvironment: Record<string, string> = {}): EmbeddedServerHost {
  let running: RunningServer | null = null;
  const startOn = async (port: number): Promise<RunningServer> => {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const clientSecret = demoSecret(dataDir);
    const seedFile = path.join(dataDir, 'demo-seed.json');
    writeFileSync(
      seedFile,
      JSON.stringify({
        organizations: [DEMO.organization],
        patients: [{ ...DEMO.patient, organizations: [DEMO.organization.id], consents: [DEMO.organization.id] }],
        clients: [{ clientId: DEMO.clientId, clientSecret, name: 'This computer', scopes: ['Patient.File.Read', 'Patient.File.Write', 'Patient.Read', 'Webhook.Manage'], organizations: [DEMO.organization.id] }],
      }),
      { mode: 0o600 },
    );
    // Loopback callbacks are how the embedded server reaches this computer's own webhook listener.
    const config = loadConfig({ HOST: '127.0.0.1', PORT: String(port), PATIENT_DOCS_DATA_DIR: dataDir, PATIENT_DOCS_SEED: seedFile, PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true', PATIENT_DOCS_LOG_LEVEL: 'warn', ...extraEnvironment });
    return startServer(config, { logger: false });
  };
  return {
    async start(preferredUrl?: string): Promise<EmbeddedServerInfo> {
      if (!running) {
        const preferred = portOf(preferredUrl);
        try {
          running = await startOn(preferred);
        } catch (error) {
          // The port of the last run is taken: any free port will do, the engine records the new URL.
          if (preferred === 0) throw error;
          running = await startOn(0);
        }
      }
      return {
        url: running.url,
        tokenUrl: `${running.url}/oauth2/token`,
        clientId: DEMO.clientId,
        clientSecret: demoSecret(dataDir),
        organizationId: DEMO.organization.id,
        organizationName: DEMO.organization.name,
        demoPatient: { ...DEMO.patient },
      };
    },
    async stop(): Promise<void> {
      const current = running;
      running = null;
      await current?.close();
    },
  };
}
