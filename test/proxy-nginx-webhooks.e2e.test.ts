/**
 * The desktop's webhook listener behind a real nginx that plays the clinic's tunnel (HTTPS with a
 * certificate of the clinic's CA outside, the loopback listener inside): the subscription takes the
 * bare public address, the server's signed deliveries pass through nginx and reach the engine, and
 * while the app is closed (nginx answers 502) the server retries until the listener is back.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../electron/sync/api/api-client.js';
import type { Journal } from '../electron/sync/journal/journal.js';
import { openJournal } from '../electron/sync/journal/open-journal.js';
import type { SecretStore } from '../electron/sync/home/secrets.js';
import { WebhookWiring } from '../electron/sync/webhooks/subscription.js';
import { startNginx, nginxPort, type Nginx } from './helpers/nginx.js';
import { freePort, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { CLIENT, ORG, PATIENT, tempDir } from './helpers/server.js';
import { waitFor } from './helpers/sync.js';
import { makeTestCertificates } from './helpers/tls.js';

function memorySecrets(): SecretStore {
  const values = new Map<string, string>();
  return {
    backend: 'encrypted-file',
    get: async (account) => values.get(account),
    set: async (account, value) => void values.set(account, value),
    delete: async (account) => values.delete(account),
  };
}

describe('webhook listener behind nginx', () => {
  const certs = makeTestCertificates('proxy-webhooks', ['DNS:localhost', 'IP:127.0.0.1']);
  const journalDir = tempDir('proxy-webhooks');
  let nginx: Nginx;
  let server: ServerProcess;
  let journal: Journal;
  let wiring: WebhookWiring;
  let api: ApiClient;
  let listenerPort: number;
  const changed: Array<string | null> = [];

  beforeAll(async () => {
    const certFile = path.join(certs.dir, 'leaf.pem');
    const keyFile = path.join(certs.dir, 'leaf.key');
    fs.writeFileSync(certFile, certs.cert);
    fs.writeFileSync(keyFile, certs.key);
    listenerPort = await freePort();
    const port = await nginxPort();
    // What IT puts in front of the workstation: TLS outside, the listener's loopback port inside.
    nginx = await startNginx(
      [
        'server {',
        `  listen 127.0.0.1:${port} ssl;`,
        '  server_name localhost;',
        `  ssl_certificate ${certFile};`,
        `  ssl_certificate_key ${keyFile};`,
        '  location / {',
        `    proxy_pass http://127.0.0.1:${listenerPort};`,
        '    proxy_set_header Host $host;',
        '  }',
        '}',
      ].join('\n'),
      port,
    );
    server = await startServerProcess({ NODE_EXTRA_CA_CERTS: certs.caFile, PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true', PATIENT_DOCS_WEBHOOK_RETRY_DELAYS: '1s,1s,1s,1s' });
    journal = openJournal(path.join(journalDir, 'journal.db'));
    api = new ApiClient({ serverUrl: server.url, organizationId: ORG, credentials: { tokenUrl: `${server.url}/oauth2/token`, clientId: CLIENT.id, clientSecret: CLIENT.secret } });
    wiring = new WebhookWiring({ journal, secrets: memorySecrets(), onDocumentsChanged: (patientId) => changed.push(patientId), onActivity: () => undefined });
  });
  afterAll(async () => {
    await wiring?.stop();
    journal?.close();
    await server?.stop();
    await nginx?.close();
    fs.rmSync(journalDir, { recursive: true, force: true });
    fs.rmSync(certs.dir, { recursive: true, force: true });
  });

  it('takes the bare https address of the proxy and receives the server’s signed deliveries through it', async () => {
    await wiring.start({ port: listenerPort, publicUrl: nginx.url, subscriptionId: null, api });
    expect(wiring.current()).toMatchObject({ listening: true, subscribed: true, error: null });
    await api.createDocument(PATIENT, 'through-nginx.pdf', '/webhooks');
    await waitFor('a delivery through nginx', () => changed.includes(PATIENT), 20_000);
    expect(journal.webhookActivity(10).some((entry) => entry.verdict === 'accepted')).toBe(true);
    expect(nginx.accessLog()).toMatch(/"POST \/webhooks\/patient-docs HTTP\/1\.1" 200 /);
  });

  it('while the app is closed nginx answers 502 and the server retries until the listener is back', async () => {
    const subscriptionId = await wiring.start({ port: listenerPort, publicUrl: nginx.url, subscriptionId: null, api });
    await wiring.stop();
    const before = changed.length;
    await api.createDocument(PATIENT, 'while-closed.pdf', '/webhooks');
    await waitFor('nginx answered 502 for the closed listener', () => /"POST \/webhooks\/patient-docs HTTP\/1\.1" 502 /.test(nginx.accessLog()), 20_000);
    await wiring.start({ port: listenerPort, publicUrl: nginx.url, subscriptionId, api });
    await waitFor('the retried delivery arrived', () => changed.length > before, 20_000);
  });
});
