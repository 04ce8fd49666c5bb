import { type ConfigOf, int, section } from 'src/config/define.js';

export const oauthSection = section('OAUTH_CONFIG', {
  title: 'OAuth',
  variables: {
    /** RFC 7591 registration is open to anyone: this bounds it per client address. */
    registrationsPerHour: int('OAUTH_REGISTRATIONS_PER_HOUR', {
      default: 20,
      min: 1,
      max: 1_000_000,
      description: 'OAuth client registrations per client network and hour',
    }),
  },
});

export const OAUTH_CONFIG = oauthSection.token;
export type OAuthConfig = ConfigOf<typeof oauthSection>;
