import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

/** Where a delivery may connect: the public Internet, and what the deployment opens beyond it. */
export interface AddressPolicy {
  /** Loopback addresses (a receiver on this machine): outside production. */
  allowLoopback: boolean;
  /** Every private, link-local and reserved range too (`WEBHOOK_ALLOW_PRIVATE`). */
  allowPrivate: boolean;
}

/** Ranges ipaddr.js (1.9) counts as unicast that are not the public Internet's either. */
const NOT_PUBLIC_V4 = ['198.18.0.0/15' /* benchmarking */].map((cidr) => ipaddr.IPv4.parseCIDR(cidr));
/**
 * The IPv6 global unicast space: ipaddr.js counts as unicast what it does not otherwise name, such as
 * deprecated site-local (fec0::/10), IPv4-compatible (::a.b.c.d) and local NAT64 (64:ff9b:1::/48)
 * addresses, so only this block is taken as public.
 */
const GLOBAL_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

/**
 * Why an address may not be connected to, or null. Only public unicast addresses pass; loopback and
 * the private ranges only as `policy` allows. An IPv4-mapped IPv6 address is refused whatever it maps
 * to: it can name any IPv4 address in a form a check of IPv4 ranges would not see.
 */
export function addressIssue(address: string, policy: AddressPolicy): string | null {
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
  const parsed = ipaddr.parse(address);
  const range = parsed.range();
  if (range === 'loopback')
    return policy.allowLoopback || policy.allowPrivate ? null : `${address} is a loopback address`;
  if (range === 'ipv4Mapped') return `${address} is an IPv4-mapped IPv6 address`;
  const notPublic =
    parsed.kind() === 'ipv4'
      ? NOT_PUBLIC_V4.some((cidr) => (parsed as ipaddr.IPv4).match(cidr))
      : !(parsed as ipaddr.IPv6).match(GLOBAL_V6);
  if (range === 'unicast' && !notPublic) return null;
  if (policy.allowPrivate && range !== 'unspecified' && range !== 'multicast' && range !== 'broadcast')
    return null;
  return `${address} is a ${range === 'unicast' ? 'reserved' : range} address, not a public one`;
}

/**
 * The address to connect to for `hostname`, resolved now and checked: every address the name resolves
 * to must pass (a name with one private address among public ones is refused), and the connection is
 * then made to the first, with no second lookup that DNS rebinding could answer differently.
 */
export async function checkedAddress(
  hostname: string,
  policy: AddressPolicy,
): Promise<{ address: string; family: 4 | 6 } | { issue: string }> {
  const bare = hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: { address: string; family: number }[];
  try {
    addresses = ipaddr.isValid(bare)
      ? [{ address: bare, family: bare.includes(':') ? 6 : 4 }]
      : await lookup(bare, { all: true, verbatim: true });
  } catch (err) {
    return { issue: `${hostname} does not resolve (${(err as { code?: string }).code ?? 'lookup failed'})` };
  }
  if (addresses.length === 0) return { issue: `${hostname} does not resolve` };
  for (const { address } of addresses) {
    const issue = addressIssue(address, policy);
    if (issue) return { issue: `${hostname} resolves to ${issue.replace(`${address} is`, `${address},`)}` };
  }
  return { address: addresses[0].address, family: addresses[0].family === 6 ? 6 : 4 };
}
