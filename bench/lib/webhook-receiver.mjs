// The webhook benches' side of a delivery: a local HTTPS receiver under a throwaway CA (the server
// trusts it through NODE_EXTRA_CA_CERTS) that counts what arrives, and the two things a bench does
// to a server to make deliveries: subscribe callbacks on the receiver, and write patient.updated
// events (admin PATCHes of a patient's name).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';

/**
 * Starts the receiver, its certificates written into `dir`. Every POST is answered 200 and counted;
 * a POST to /latency… also records the time from its body's `timestamp` to its arrival.
 */
export async function startWebhookReceiver(dir) {
  const ssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=bench CA');
  ssl('req', ...ec, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=localhost');
  fs.writeFileSync(path.join(dir, 'leaf.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  ssl('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.pem', '-days', '1', '-extfile', 'leaf.ext');
  const caFile = path.join(dir, 'ca.pem');

  let received = 0;
  let connections = 0;
  let onReceived = () => {};
  const latencies = [];
  const server = https.createServer({ key: fs.readFileSync(path.join(dir, 'leaf.key')), cert: fs.readFileSync(path.join(dir, 'leaf.pem')), keepAliveTimeout: 60_000 }, (request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const now = Date.now();
      received += 1;
      if (request.url.startsWith('/latency')) latencies.push(now - Date.parse(JSON.parse(Buffer.concat(chunks).toString()).timestamp));
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      onReceived();
    });
  });
  server.on('secureConnection', () => (connections += 1));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    caFile,
    ca: fs.readFileSync(caFile),
    /** The environment a server needs to deliver here: the CA trusted, loopback callbacks allowed. */
    serverEnv: { NODE_EXTRA_CA_CERTS: caFile, PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS: 'true' },
    /** POSTs received since the last reset(). */
    get received() {
      return received;
    },
    /** TLS connections accepted so far. */
    get connections() {
      return connections;
    },
    /** Event-to-arrival times (ms) of the POSTs to /latency…. */
    latencies,
    reset() {
      received = 0;
    },
    /** Resolves once `count` POSTs have arrived since the last reset(). */
    waitForReceived(count) {
      return new Promise((resolve) => {
        if (received >= count) return resolve();
        onReceived = () => received >= count && resolve();
      });
    },
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * Subscribes `count` callbacks (https://127.0.0.1:<port>/hook/<n>) to patient.updated, through the
 * client API with `headers` (a bearer token with Webhook.Manage and an Organization-ID).
 */
export async function subscribePatientUpdates(baseUrl, headers, port, count) {
  for (let index = 0; index < count; index += 1) {
    const response = await fetch(`${baseUrl}/v1/webhooks/subscribe`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ events: ['patient.updated'], callback: `https://127.0.0.1:${port}/hook/${index}`, hmac: `bench-secret-${index}` }),
    });
    if (response.status !== 201) throw new Error(`subscribe failed: ${response.status} ${await response.text()}`);
  }
}

/** Writes `count` patient.updated events: PATCHes of the patient's name through the admin API, four at a time. */
export async function writePatientEvents(baseUrl, adminToken, patientId, count, label) {
  let written = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (written < count) {
        const index = written++;
        const response = await fetch(`${baseUrl}/admin/v1/patients/${patientId}`, {
          method: 'PATCH',
          headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `Jane ${label} ${index}` }),
        });
        if (!response.ok) throw new Error(`patient update failed: ${response.status} ${await response.text()}`);
        await response.arrayBuffer();
      }
    }),
  );
}
