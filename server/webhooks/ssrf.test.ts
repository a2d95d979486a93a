import { describe, expect, it } from 'vitest';
import { blockedReason, CallbackGuard, CallbackRefused, parseCallback, type Resolver } from './ssrf.js';

const fakeDns: Record<string, string[]> = {
  'hooks.example.com': ['93.184.216.34'],
  'internal.example.com': ['10.1.2.3'],
  'mixed.example.com': ['93.184.216.34', '192.168.1.10'],
  'v6.example.com': ['2606:2800:220:1:248:1893:25c8:1946'],
  'metadata.example.com': ['169.254.169.254'],
  'lan.example.com': ['192.168.1.20'],
  'tunnel.example.com': ['2001:0:4136:e378:8000:63bf:3fff:fdd2'],
  'nat64.example.com': ['93.184.216.34', '64:ff9b:1::c0a8:10a'],
};
const resolver: Resolver = async (hostname) => {
  const answers = fakeDns[hostname];
  if (!answers) throw new Error('ENOTFOUND');
  return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

const strict = new CallbackGuard({ allowPrivate: false, resolver });
const lenient = new CallbackGuard({ allowPrivate: true, resolver });
const resolve = (guard: CallbackGuard, url: string) => guard.resolve(parseCallback(url));

describe('callback SSRF guard', () => {
  it('accepts public https callbacks and pins the resolved address', async () => {
    await expect(resolve(strict, 'https://hooks.example.com/patient-docs')).resolves.toEqual({ address: '93.184.216.34', family: 4 });
    await expect(resolve(strict, 'https://v6.example.com:8443/x')).resolves.toMatchObject({ family: 6 });
    await expect(resolve(strict, 'https://[2606:2800:220:1:248:1893:25c8:1946]/x')).resolves.toMatchObject({ family: 6 });
  });

  it('refuses non-https URLs and credentials before any lookup', () => {
    expect(() => parseCallback('http://hooks.example.com/x')).toThrow(/https:/);
    expect(() => parseCallback('ftp://hooks.example.com/x')).toThrow(CallbackRefused);
    expect(() => parseCallback('https://user:pw@hooks.example.com/x')).toThrow(/credentials/);
    expect(() => parseCallback('not a url')).toThrow(/absolute URL/);
    // Plain http only to a loopback literal, and only where private callbacks are allowed (the embedded server).
    expect(() => parseCallback('http://127.0.0.1:8787/webhooks')).toThrow(/https:/);
    expect(parseCallback('http://127.0.0.1:8787/webhooks', { loopbackHttp: true }).port).toBe('8787');
    expect(parseCallback('http://[::1]:8787/webhooks', { loopbackHttp: true }).hostname).toBe('[::1]');
    expect(() => parseCallback('http://10.0.0.5/webhooks', { loopbackHttp: true })).toThrow(/https:/);
    expect(() => parseCallback('http://localhost.example.com/webhooks', { loopbackHttp: true })).toThrow(/https:/);
  });

  it('refuses a name that resolves to a private address, or to any private address among several', async () => {
    await expect(resolve(strict, 'https://internal.example.com/x')).rejects.toThrow(/10\.1\.2\.3 is private \(internal\.example\.com resolves to 10\.1\.2\.3\)/);
    await expect(resolve(strict, 'https://mixed.example.com/x')).rejects.toThrow(/192\.168\.1\.10/);
    await expect(resolve(strict, 'https://unknown.example.com/x')).rejects.toThrow(/cannot be resolved/);
    await expect(resolve(strict, 'https://tunnel.example.com/x')).rejects.toThrow(/Teredo tunnel/);
    await expect(resolve(strict, 'https://nat64.example.com/x')).rejects.toThrow(/local-use NAT64/);
  });

  it.each([
    ['https://127.0.0.1:8443/x', /loopback/],
    ['https://[::1]/x', /loopback/],
    ['https://169.254.169.254/latest/meta-data', /metadata/],
    ['https://0.0.0.0/x', /unspecified/],
    ['https://100.64.1.1/x', /carrier-grade NAT/],
    ['https://172.20.0.1/x', /private/],
    ['https://[fd00::1]/x', /unique local/],
    ['https://[fe80::1]/x', /link-local/],
    ['https://[::ffff:127.0.0.1]/x', /loopback/],
    ['https://[::127.0.0.1]/x', /loopback/],
    ['https://[::ffff:0:10.0.0.1]/x', /private/],
    ['https://[::ffff:a9fe:a9fe]/x', /metadata/],
    ['https://[2002:0a00:0001::1]/x', /private/],
    ['https://2130706433/x', /loopback/],
    ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x', /Teredo/],
    ['https://[2001::1]/x', /Teredo/],
    ['https://[64:ff9b:1::a00:1]/x', /local-use NAT64/],
    ['https://[64:ff9b:1:ffff::5db8:d822]/x', /local-use NAT64/],
  ])('refuses %s', async (url, reason) => {
    await expect(resolve(strict, url)).rejects.toThrow(reason);
  });

  it('allows private and loopback addresses with the flag, but never metadata or unspecified addresses', async () => {
    await expect(resolve(lenient, 'https://127.0.0.1:8443/x')).resolves.toEqual({ address: '127.0.0.1', family: 4 });
    await expect(resolve(lenient, 'https://lan.example.com/x')).resolves.toEqual({ address: '192.168.1.20', family: 4 });
    await expect(resolve(lenient, 'https://169.254.169.254/x')).rejects.toThrow(/never allowed/);
    await expect(resolve(lenient, 'https://metadata.example.com/x')).rejects.toThrow(/never allowed/);
    await expect(resolve(lenient, 'https://[fd00:ec2::254]/x')).rejects.toThrow(/never allowed/);
  });

  it('classifies public addresses as allowed', () => {
    expect(blockedReason('8.8.8.8')).toBeUndefined();
    expect(blockedReason('2001:4860:4860::8888')).toBeUndefined();
  });
});
