import { clientNetwork, tierLimit } from 'src/modules/auth/rate-limits/rate-limits.js';
import { AuthTier } from 'src/modules/auth/auth.types.js';

describe('tierLimit', () => {
  const limits = {
    anonymous: 50,
    apiKey: 1_000,
    oauth: 15_000,
    session: 14_000,
    windowSeconds: 3_600,
    authEndpoints: 60,
    authEndpointsWindowSeconds: 60,
  };

  it.each([
    [AuthTier.Anonymous, 50],
    [AuthTier.ApiKey, 1_000],
    [AuthTier.OAuth, 15_000],
    [AuthTier.Session, 14_000],
  ])('gives the %s tier its own hourly budget', (tier, limit) => {
    expect(tierLimit(limits, tier)).toBe(limit);
  });
});

describe('clientNetwork', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::9', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:ffff::', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::203.0.113.7', '64:ff9b:0:0::/64'],
  ])('counts %s as %s', (address, network) => {
    expect(clientNetwork(address)).toBe(network);
  });

  it('tells the /64s of one provider apart', () => {
    expect(clientNetwork('2001:db8:1:3::1')).not.toBe(clientNetwork('2001:db8:1:2::1'));
  });
});
