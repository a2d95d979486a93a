/**
 * Trusting a clinic's own certificate authority (or a self-signed server certificate): IT gives
 * the CA certificate once (`connect --ca-file`, or the connection screen), it is kept in the sync
 * home as `server-ca.pem`, and every request to the server (token, API, tus, downloads) trusts it
 * on top of the system's CAs and `NODE_EXTRA_CA_CERTS`. There is deliberately no way to switch
 * certificate checks off. Certificate failures get their own plain-language errors.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import tls from 'node:tls';

export const SERVER_CA_FILE = 'server-ca.pem';

export interface CaCertificateInfo {
  subject: string;
  issuer: string;
  /** SHA-256 of the DER bytes, as `AA:BB:…` (what `openssl x509 -fingerprint -sha256` prints). */
  fingerprint: string;
  validTo: string;
  isCa: boolean;
}

export interface TrustedCa {
  /** The certificates in PEM, one after the other. */
  pem: string;
  certificates: CaCertificateInfo[];
}

/** A CA file that cannot be used, explained for the person who picked it. */
export class CaCertificateError extends Error {
  override name = 'CaCertificateError';
}

function pemBlocks(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/**
 * A CA certificate as IT hands it over: PEM (one or more certificates, `.pem`/`.crt`), or the
 * binary DER form Windows exports as `.cer` (given here base64-encoded, or as raw bytes).
 */
export function parseCaCertificate(input: string | Buffer): TrustedCa {
  const text = Buffer.isBuffer(input) ? (input.includes('-----BEGIN') ? input.toString('utf8') : null) : input;
  if (text !== null && /PRIVATE KEY-----/.test(text) && pemBlocks(text).length === 0) {
    throw new CaCertificateError('this file holds a private key, not a certificate: give the CA certificate (.crt, .pem or .cer), and keep the key secret');
  }
  let ders: Buffer[];
  if (text !== null && text.includes('-----BEGIN')) {
    const blocks = pemBlocks(text);
    if (blocks.length === 0) throw new CaCertificateError('this file holds no certificate (no "BEGIN CERTIFICATE" block): give the CA certificate (.crt, .pem or .cer)');
    ders = blocks.map((block) => Buffer.from(block.replace(/-----(BEGIN|END) CERTIFICATE-----|\s/g, ''), 'base64'));
  } else if (Buffer.isBuffer(input)) {
    ders = [input];
  } else {
    const compact = input.replace(/\s/g, '');
    if (compact === '' || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) throw new CaCertificateError('this is not a certificate: give the CA certificate file (.crt, .pem or .cer)');
    ders = [Buffer.from(compact, 'base64')];
  }
  const certificates: CaCertificateInfo[] = [];
  const pems: string[] = [];
  for (const der of ders) {
    let certificate: X509Certificate;
    try {
      certificate = new X509Certificate(der);
    } catch {
      throw new CaCertificateError('this file is not a readable certificate: give the CA certificate (.crt, .pem or .cer) as IT exported it');
    }
    if (Date.parse(certificate.validTo) < Date.now()) {
      throw new CaCertificateError(`this certificate (${oneLine(certificate.subject)}) expired on ${certificate.validTo}: ask IT for the current one`);
    }
    certificates.push(describe(certificate));
    pems.push(certificate.toString().trim());
  }
  return { pem: `${pems.join('\n')}\n`, certificates };
}

function describe(certificate: X509Certificate): CaCertificateInfo {
  return { subject: oneLine(certificate.subject), issuer: oneLine(certificate.issuer), fingerprint: certificate.fingerprint256, validTo: certificate.validTo, isCa: certificate.ca };
}

function oneLine(name: string): string {
  return name.split('\n').filter(Boolean).join(', ');
}

/** The CA kept in the sync home, or null when there is none (or it no longer reads). */
export function readTrustedCa(home: string): TrustedCa | null {
  let text: string;
  try {
    text = readFileSync(path.join(home, SERVER_CA_FILE), 'utf8');
  } catch {
    return null;
  }
  try {
    return parseCaCertificate(text);
  } catch {
    return null;
  }
}

export function saveTrustedCa(home: string, ca: TrustedCa | null): void {
  const file = path.join(home, SERVER_CA_FILE);
  if (ca === null) {
    rmSync(file, { force: true });
    return;
  }
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, ca.pem, { mode: 0o600 });
  renameSync(temp, file);
}

/**
 * What got passes as `ca`: undefined keeps Node's own store (system CAs plus NODE_EXTRA_CA_CERTS);
 * with a clinic CA, the system CAs, NODE_EXTRA_CA_CERTS and that CA (a `ca` option replaces the
 * default store, so the others are named again).
 */
export function certificateAuthorities(ca: TrustedCa | null, env: NodeJS.ProcessEnv = process.env): string[] | undefined {
  if (!ca) return undefined;
  return [...tls.rootCertificates, ...extraCaCertificates(env), ca.pem];
}

function extraCaCertificates(env: NodeJS.ProcessEnv): string[] {
  const file = env.NODE_EXTRA_CA_CERTS;
  if (!file) return [];
  try {
    return pemBlocks(readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
}

export type CertificateProblem = 'CERT_UNTRUSTED' | 'CERT_NAME_MISMATCH' | 'CERT_EXPIRED';

const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_CHAIN_TOO_LONG',
  'INVALID_CA',
  'CERT_REJECTED',
]);

/** The certificate failure an error code names (Node's TLS and OpenSSL codes), or null. */
export function certificateProblem(code: string | undefined): CertificateProblem | null {
  if (!code) return null;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID' || code === 'HOSTNAME_MISMATCH') return 'CERT_NAME_MISMATCH';
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') return 'CERT_EXPIRED';
  return UNTRUSTED.has(code) ? 'CERT_UNTRUSTED' : null;
}

/**
 * What the server presents, read without trusting it and without sending anything: for IT to
 * compare with the certificate they issued (name, issuer, dates, fingerprint). Null when the
 * address is not https or nothing answers.
 */
export async function presentedCertificate(address: string, timeoutMs = 10_000): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:') return null;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    const socket = tls.connect({ host, port: Number(url.port || 443), rejectUnauthorized: false, ...(isIP(host) ? {} : { servername: host }) });
    const timer = setTimeout(() => finish(null), timeoutMs);
    const finish = (value: string | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    socket.once('error', () => finish(null));
    socket.once('secureConnect', () => {
      const peer = socket.getPeerCertificate();
      if (!peer || !peer.fingerprint256) return finish(null);
      const subject = peer.subject?.CN ?? '?';
      const issuer = peer.issuer?.CN ?? '?';
      const names = peer.subjectaltname ? `, for ${peer.subjectaltname}` : '';
      finish(`the server presented a certificate for '${subject}'${names}, issued by '${issuer}', valid ${peer.valid_from} to ${peer.valid_to}, SHA-256 fingerprint ${peer.fingerprint256}`);
    });
  });
}
