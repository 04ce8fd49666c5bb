import { coreSection } from 'src/config/core.config.js';
import { type ConfigOf, int, origins, section } from 'src/config/define.js';

export const sessionsSection = section('SESSIONS_CONFIG', {
  title: 'Sessions',
  variables: {
    /** A session unused for this long ends. */
    idleSeconds: int('SESSION_IDLE_SECONDS', {
      default: 12 * 3_600,
      min: 60,
      max: 30 * 86_400,
      description: 'a session ends after this long unused (by default 12 hours)',
    }),
    /** A session ends this long after sign-in, however active. */
    lifetimeSeconds: int('SESSION_LIFETIME_SECONDS', {
      default: 7 * 86_400,
      min: 60,
      max: 365 * 86_400,
      description: 'a session ends this long after sign-in at the latest, however active (by default 7 days)',
    }),
    /** Origins whose pages may send cookie-authenticated writes; null: the service's own origin only. */
    webOrigins: origins('WEB_ORIGINS', {
      defaultText: "the service's own origin",
      description:
        'comma-separated origins whose pages may send cookie-authenticated writes (docs/auth.md, CSRF)',
    }),
  },
  derive: (values, reading) => {
    const core = reading.section(coreSection);
    return {
      ...values,
      /** `__Host-svc_session` with `Secure`; false only outside production without HTTPS. */
      secureCookie:
        core.nodeEnv === 'production' ||
        core.forceHttps ||
        core.tls !== null ||
        core.publicBaseUrl?.startsWith('https:') === true,
    };
  },
});

export const SESSIONS_CONFIG = sessionsSection.token;
export type SessionsConfig = ConfigOf<typeof sessionsSection>;
