/**
 * The sync engine behind a real nginx with the site of docs/nginx.conf.example (TLS with a
 * certificate of a test CA the engine trusts), in front of a real server process: the setup the
 * proxy tests share. Registers its own beforeAll/afterAll in the calling describe; a test's own
 * afterAll registered after this call runs before these close everything (vitest's hook stack).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { certificateAuthorities, parseCaCertificate } from '../../electron/sync/api/tls-trust.js';
import { exampleSite, nginxPort, startNginx, type Nginx } from './nginx.js';
import { startServerProcess, type ServerProcess } from './processes.js';
import { allDocuments, startEngine, type EngineUnderTest } from './sync.js';
import { makeTestCertificates } from './tls.js';

type SiteChanges = Array<[from: string | RegExp, to: string]>;
type EngineOptions = NonNullable<Parameters<typeof startEngine>[1]>;

export interface EngineBehindNginx {
  server: ServerProcess;
  nginx: Nginx;
  sut: EngineUnderTest;
  /** The test CA's certificate file (PEM), which signed nginx's. */
  caFile: string;
  /** The example site with these changes, for `nginx.reload`. */
  site(changes?: SiteChanges): string;
  /** The journal's row of a file of the synced folder. */
  record(relativePath: string): ReturnType<EngineUnderTest['journal']['byPair']>[number] | undefined;
  /** The server's document of that name, anywhere in the patient's tree. */
  document(fileName: string): Promise<Awaited<ReturnType<typeof allDocuments>>[number] | undefined>;
}

/** `setup.server`, `setup.nginx` and `setup.sut` are there once the describe's beforeAll ran. */
export function engineBehindNginx(name: string, options: { site?: SiteChanges; engine?: EngineOptions } = {}): EngineBehindNginx {
  const certs = makeTestCertificates(name, ['DNS:localhost', 'IP:127.0.0.1']);
  const certFile = path.join(certs.dir, 'leaf.pem');
  const keyFile = path.join(certs.dir, 'leaf.key');
  const setup = {
    caFile: certs.caFile,
    site: (changes: SiteChanges = []) => changes,
    record: (relativePath: string) => setup.sut.journal.byPair(setup.sut.pair.id).find((candidate) => candidate.relativePath === relativePath),
    document: async (fileName: string) => (await allDocuments(setup.sut.api)).find((candidate) => candidate.fileName === fileName),
  } as unknown as EngineBehindNginx;

  beforeAll(async () => {
    fs.writeFileSync(certFile, certs.cert);
    fs.writeFileSync(keyFile, certs.key);
    const port = await nginxPort();
    setup.server = await startServerProcess({ PATIENT_DOCS_PUBLIC_URL: `https://localhost:${port}` });
    setup.site = (changes = []) => exampleSite({ port, certFile, keyFile, upstream: setup.server.url }, changes);
    setup.nginx = await startNginx(setup.site(options.site), port);
    const ca = certificateAuthorities(parseCaCertificate(fs.readFileSync(certs.caFile)), {});
    setup.sut = await startEngine(setup.nginx.url, { tuning: { settleMs: 200 }, backoffMs: 200, ...options.engine, ...(ca ? { certificateAuthority: ca } : {}) });
  });
  afterAll(async () => {
    await setup.sut?.close();
    await setup.nginx?.close();
    await setup.server?.stop();
    fs.rmSync(certs.dir, { recursive: true, force: true });
  });
  return setup;
}
