/**
 * The CA file as IT hands it over (PEM with one or more certificates, a Windows DER .cer, base64 of
 * one) is read; what is not a usable certificate is refused with a reason; and a clinic CA adds to
 * the system's CAs and NODE_EXTRA_CA_CERTS instead of replacing them.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { certificateAuthorities, certificateProblem, parseCaCertificate, readTrustedCa, saveTrustedCa, SERVER_CA_FILE } from '../electron/sync/api/tls-trust.js';
import { makeTestCertificates } from './helpers/tls.js';

describe('the clinic CA certificate', () => {
  const certs = makeTestCertificates('net-trust');
  const other = makeTestCertificates('net-trust-other');
  const pem = fs.readFileSync(certs.caFile, 'utf8');
  const der = execFileSync('openssl', ['x509', '-in', certs.caFile, '-outform', 'DER']);
  const fingerprint = execFileSync('openssl', ['x509', '-in', certs.caFile, '-noout', '-fingerprint', '-sha256'], { encoding: 'utf8' }).split('=')[1]!.trim();
  afterAll(() => {
    fs.rmSync(certs.dir, { recursive: true, force: true });
    fs.rmSync(other.dir, { recursive: true, force: true });
  });

  it('reads PEM, a bundle, DER bytes and base64 DER alike, with the fingerprint openssl prints', () => {
    for (const input of [pem, Buffer.from(pem), der, der.toString('base64')]) {
      const ca = parseCaCertificate(input);
      expect(ca.certificates).toHaveLength(1);
      expect(ca.certificates[0]).toMatchObject({ fingerprint, isCa: true });
      expect(ca.certificates[0]!.subject).toContain('Patient Docs net-trust test CA');
    }
    const bundle = parseCaCertificate(`${pem}\n${fs.readFileSync(other.caFile, 'utf8')}`);
    expect(bundle.certificates).toHaveLength(2);
  });

  it('refuses a key, an empty file and text that is no certificate, saying what to give instead', () => {
    expect(() => parseCaCertificate(fs.readFileSync(path.join(certs.dir, 'ca.key'), 'utf8'))).toThrow(/private key, not a certificate/);
    expect(() => parseCaCertificate('')).toThrow(/not a certificate/);
    expect(() => parseCaCertificate('hello world')).toThrow(/not a (readable )?certificate/);
    expect(() => parseCaCertificate('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')).toThrow(/not a readable certificate/);
  });

  it('is kept in the sync home (0600) and read back; forgetting removes it', () => {
    const home = fs.mkdtempSync(path.join(certs.dir, 'home-'));
    saveTrustedCa(home, parseCaCertificate(pem));
    expect(fs.statSync(path.join(home, SERVER_CA_FILE)).mode & 0o777).toBe(0o600);
    expect(readTrustedCa(home)?.certificates[0]?.fingerprint).toBe(fingerprint);
    saveTrustedCa(home, null);
    expect(readTrustedCa(home)).toBeNull();
  });

  it('adds to the system CAs and NODE_EXTRA_CA_CERTS rather than replacing them', () => {
    expect(certificateAuthorities(null)).toBeUndefined();
    const list = certificateAuthorities(parseCaCertificate(pem), { NODE_EXTRA_CA_CERTS: other.caFile })!;
    expect(list.length).toBe(tls.rootCertificates.length + 2);
    expect(list).toContain(fs.readFileSync(other.caFile, 'utf8').trim());
  });

  it('names the certificate failure of each TLS error code', () => {
    expect(certificateProblem('UNABLE_TO_VERIFY_LEAF_SIGNATURE')).toBe('CERT_UNTRUSTED');
    expect(certificateProblem('DEPTH_ZERO_SELF_SIGNED_CERT')).toBe('CERT_UNTRUSTED');
    expect(certificateProblem('SELF_SIGNED_CERT_IN_CHAIN')).toBe('CERT_UNTRUSTED');
    expect(certificateProblem('ERR_TLS_CERT_ALTNAME_INVALID')).toBe('CERT_NAME_MISMATCH');
    expect(certificateProblem('CERT_HAS_EXPIRED')).toBe('CERT_EXPIRED');
    expect(certificateProblem('CERT_NOT_YET_VALID')).toBe('CERT_EXPIRED');
    expect(certificateProblem('ECONNREFUSED')).toBeNull();
  });
});
