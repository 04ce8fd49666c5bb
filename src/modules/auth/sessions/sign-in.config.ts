import { type ConfigOf, int, section } from 'src/config/define.js';

/** Sign-in attempts allowed per client address and per email in each window, before 429. */
export const signInSection = section('SIGN_IN_CONFIG', {
  title: 'Sign-in',
  variables: {
    maxAttempts: int('SIGN_IN_MAX_ATTEMPTS', {
      default: 10,
      min: 1,
      max: 10_000,
      description:
        'failed sign-ins allowed per client network, and per email for the networks that failed at it, in ' +
        'each window (`SIGN_IN_WINDOW_SECONDS`)',
    }),
    windowSeconds: int('SIGN_IN_WINDOW_SECONDS', {
      default: 15 * 60,
      min: 1,
      max: 86_400,
      description: 'the window of `SIGN_IN_MAX_ATTEMPTS`',
    }),
  },
});

export const SIGN_IN_CONFIG = signInSection.token;
export type SignInConfig = ConfigOf<typeof signInSection>;
