/**
 * The callback guard of DESIGN §3: https only, no credentials in the URL, and the host must
 * resolve only to public addresses (unless private callbacks are allowed). The address it
 * returns is the one the connection uses, so a DNS answer that changes later (rebinding)
 * cannot redirect a delivery.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

export class CallbackRefused extends Error {
  override name = 'CallbackRefused';
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((answer) => ({ address: answer.address, family: answer.family === 6 ? 6 : 4 }));
};

/** [range, prefix, what it is]: what a callback must never reach. */
const BLOCKED_V4: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified ("this network")'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4 relay'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];
const BLOCKED_V6: Array<[string, number, string]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['100::', 64, 'discard'],
  // Teredo tunnels IPv4 inside IPv6 (the client's address, obfuscated, in the last 32 bits): the
  // relay that unwraps it may sit on the server's own network.
  ['2001::', 32, 'Teredo tunnel'],
  ['2001:db8::', 32, 'documentation'],
  // Local-use NAT64 (RFC 8215): translated by the site's own gateway, so it reaches whatever IPv4
  // address the network chooses, private ones included.
  ['64:ff9b:1::', 48, 'local-use NAT64'],
  ['fc00::', 7, 'unique local (private; includes fd00:ec2::254 metadata)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
];

const ranges = BLOCKED_V4.map(([network, prefix, label]) => ({ label, list: subnet(network, prefix, 'ipv4') })).concat(
  BLOCKED_V6.map(([network, prefix, label]) => ({ label, list: subnet(network, prefix, 'ipv6') })),
);

function subnet(network: string, prefix: number, type: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  list.addSubnet(network, prefix, type);
  return list;
}

/**
 * Refused even when private callbacks are allowed: cloud metadata services and "any address"
 * are never a receiver, on a LAN or in a test.
 */
const ALWAYS_BLOCKED = new BlockList();
ALWAYS_BLOCKED.addAddress('169.254.169.254', 'ipv4');
ALWAYS_BLOCKED.addAddress('169.254.170.2', 'ipv4');
ALWAYS_BLOCKED.addAddress('fd00:ec2::254', 'ipv6');
ALWAYS_BLOCKED.addSubnet('0.0.0.0', 8, 'ipv4');
ALWAYS_BLOCKED.addAddress('::', 'ipv6');

/**
 * IPv4 hidden inside IPv6 is judged as IPv4: mapped ::ffff:a.b.c.d, translated ::ffff:0:a.b.c.d,
 * the deprecated IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96 and 6to4 2002::/16.
 */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::ffff:0:|64:ff9b::|::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted?.[1]) return dotted[1];
  const hex = /^(?:::ffff:|::ffff:0:|64:ff9b::|::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex?.[1] && hex[2]) return hexPairToIpv4(hex[1], hex[2]);
  const sixToFour = /^2002:([0-9a-f]{1,4}):([0-9a-f]{1,4})(?::|$)/.exec(lower);
  if (sixToFour?.[1] && sixToFour[2]) return hexPairToIpv4(sixToFour[1], sixToFour[2]);
  return undefined;
}

function hexPairToIpv4(high: string, low: string): string {
  const a = parseInt(high, 16);
  const b = parseInt(low, 16);
  return [a >> 8, a & 0xff, b >> 8, b & 0xff].join('.');
}

/** Why an address is refused, or undefined when it is public. With allowPrivate only metadata and unspecified addresses are refused. */
export function blockedReason(address: string, allowPrivate = false): string | undefined {
  const family = isIP(address);
  if (family === 0) return 'not an IP address';
  if (family === 6) {
    const inner = embeddedIpv4(address);
    if (inner !== undefined) return blockedReason(inner, allowPrivate);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (ALWAYS_BLOCKED.check(address, type)) return 'a cloud metadata or unspecified address, never allowed';
  if (allowPrivate) return undefined;
  return ranges.find((range) => range.list.check(address, type))?.label;
}

/**
 * Syntax checks that need no network: an absolute https URL without credentials. With
 * `loopbackHttp` (private callbacks allowed), plain http is also taken for a loopback address
 * literal (127.0.0.1, [::1]): the bytes never leave the computer, as with the app's own listener
 * beside its embedded server.
 */
export function parseCallback(raw: string, options: { loopbackHttp?: boolean } = {}): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CallbackRefused('callback must be an absolute URL');
  }
  const loopback = url.protocol === 'http:' && options.loopbackHttp === true && blockedReason(url.hostname.replace(/^\[(.*)\]$/, '$1')) === 'loopback';
  if (url.protocol !== 'https:' && !loopback) throw new CallbackRefused(`callback must use https: (got ${url.protocol})`);
  if (url.username || url.password) throw new CallbackRefused('callback must not carry credentials (user:password@)');
  if (!url.hostname) throw new CallbackRefused('callback must name a host');
  return url;
}

export class CallbackGuard {
  constructor(
    private readonly options: { allowPrivate: boolean; loopbackHttp?: boolean; resolver?: Resolver },
  ) {}

  /** parseCallback with this server's rule for plain http on loopback (the desktop app's embedded server only). */
  parse(raw: string): URL {
    return parseCallback(raw, { loopbackHttp: this.options.allowPrivate && this.options.loopbackHttp === true });
  }

  /** The address to connect to; CallbackRefused when none is acceptable. */
  async resolve(url: URL): Promise<ResolvedAddress> {
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const literal = isIP(host);
    let addresses: ResolvedAddress[];
    if (literal !== 0) {
      addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
    } else {
      try {
        addresses = await (this.options.resolver ?? systemResolver)(host);
      } catch {
        throw new CallbackRefused(`callback host ${host} cannot be resolved`);
      }
      if (addresses.length === 0) throw new CallbackRefused(`callback host ${host} cannot be resolved`);
    }
    // Every answer must be acceptable: otherwise another lookup could pick the refused one.
    for (const { address } of addresses) {
      const reason = blockedReason(address, this.options.allowPrivate);
      if (reason !== undefined) {
        const via = literal === 0 ? ` (${host} resolves to ${address})` : '';
        const hint = this.options.allowPrivate ? '' : '; only public addresses are allowed unless PATIENT_DOCS_ALLOW_PRIVATE_CALLBACKS is set';
        throw new CallbackRefused(`callback address ${address} is ${reason}${via}${hint}`);
      }
    }
    const first = addresses[0];
    if (!first) throw new CallbackRefused(`callback host ${host} cannot be resolved`);
    return first;
  }
}
