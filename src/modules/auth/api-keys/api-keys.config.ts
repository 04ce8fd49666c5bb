import { type ConfigOf, int, section } from 'src/config/define.js';

export const apiKeysSection = section('API_KEYS_CONFIG', {
  title: 'API keys',
  variables: {
    /** How long a verified API key is trusted without reading it again (0: read on every request). */
    cacheSeconds: int('API_KEY_CACHE_SECONDS', {
      default: 60,
      min: 0,
      max: 3_600,
      description:
        'how long an API process trusts a key it has verified; a revocation still takes effect at once ' +
        '(0: read the key on every request)',
    }),
  },
});

export const API_KEYS_CONFIG = apiKeysSection.token;
export type ApiKeysConfig = ConfigOf<typeof apiKeysSection>;
