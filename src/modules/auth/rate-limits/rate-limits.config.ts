import { type ConfigOf, int, section } from 'src/config/define.js';

const REQUESTS = { min: 1, max: 10_000_000 };
const WINDOW = { min: 1, max: 86_400 };

export const rateLimitsSection = section('RATE_LIMITS_CONFIG', {
  title: 'Rate limits',
  variables: {
    /** Requests per window for each authentication tier. */
    apiKey: int('RATE_LIMIT_API_KEY', {
      default: 1_000,
      ...REQUESTS,
      description: 'requests per window for each API key (the API-key tier)',
    }),
    oauth: int('RATE_LIMIT_OAUTH', {
      default: 15_000,
      ...REQUESTS,
      description: 'requests per window for each OAuth access token (the OAuth tier)',
    }),
    session: int('RATE_LIMIT_SESSION', {
      default: 15_000,
      ...REQUESTS,
      description: 'requests per window for each browser session (the Session tier)',
    }),
    anonymous: int('RATE_LIMIT_ANONYMOUS', {
      default: 50,
      ...REQUESTS,
      description: 'requests per window for each anonymous client address (the Anonymous tier)',
    }),
    windowSeconds: int('RATE_LIMIT_WINDOW_SECONDS', {
      default: 3_600,
      ...WINDOW,
      description: 'rate-limit window of the tiers',
    }),
    /** Requests per client network to the public routes that do work: signing in, the OAuth endpoints. */
    authEndpoints: int('RATE_LIMIT_AUTH_ENDPOINTS', {
      default: 60,
      ...REQUESTS,
      description:
        'requests per client network to signing in and the OAuth endpoints, in a window of their own ' +
        '(`RATE_LIMIT_AUTH_WINDOW_SECONDS`)',
    }),
    authEndpointsWindowSeconds: int('RATE_LIMIT_AUTH_WINDOW_SECONDS', {
      default: 60,
      ...WINDOW,
      description: 'the window of `RATE_LIMIT_AUTH_ENDPOINTS`',
    }),
  },
});

export const RATE_LIMITS_CONFIG = rateLimitsSection.token;
export type RateLimits = ConfigOf<typeof rateLimitsSection>;
