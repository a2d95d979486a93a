/** A throwaway CA and a leaf certificate made with openssl, for tests that need real HTTPS. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestCertificates {
  dir: string;
  /** The CA in PEM, for NODE_EXTRA_CA_CERTS or a client's `ca`. */
  caFile: string;
  key: Buffer;
  cert: Buffer;
}

/** `subjectAltNames` like `['IP:127.0.0.1', 'DNS:localhost']`; the first DNS name is the CN. */
export function makeTestCertificates(label: string, subjectAltNames: string[] = ['IP:127.0.0.1', 'DNS:localhost']): TestCertificates {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `patient-docs-${label}-tls-`));
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const commonName = subjectAltNames.find((name) => name.startsWith('DNS:'))?.slice(4) ?? 'localhost';
  run('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', `/CN=Patient Docs ${label} test CA`);
  run('req', ...ec, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', `/CN=${commonName}`);
  fs.writeFileSync(path.join(dir, 'leaf.ext'), `subjectAltName=${subjectAltNames.join(',')}\nbasicConstraints=CA:FALSE\n`);
  run('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'leaf.pem', '-days', '2', '-extfile', 'leaf.ext');
  return { dir, caFile: path.join(dir, 'ca.pem'), key: fs.readFileSync(path.join(dir, 'leaf.key')), cert: fs.readFileSync(path.join(dir, 'leaf.pem')) };
}
