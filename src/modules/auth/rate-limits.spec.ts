import { tierLimit } from 'src/modules/auth/rate-limits.js';
import { AuthTier } from 'src/modules/auth/auth.types.js';

describe('tierLimit', () => {
  const limits = { anonymous: 50, apiKey: 1_000, oauth: 15_000, session: 14_000, windowSeconds: 3_600 };

  it.each([
    [AuthTier.Anonymous, 50],
    [AuthTier.ApiKey, 1_000],
    [AuthTier.OAuth, 15_000],
    [AuthTier.Session, 14_000],
  ])('gives the %s tier its own hourly budget', (tier, limit) => {
    expect(tierLimit(limits, tier)).toBe(limit);
  });
});
