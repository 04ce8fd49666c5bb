import { httpSection } from 'src/common/http/http.config.js';
import { idempotencySection } from 'src/common/idempotency/idempotency.config.js';
import { loggingSection } from 'src/common/logging/logging.config.js';
import { queueSection } from 'src/common/queue/queue.config.js';
import { redisSection } from 'src/common/redis/redis.config.js';
import { ConfigModule } from 'src/config/config.module.js';
import { coreSection } from 'src/config/core.config.js';
import { type Composed, type Env, readConfig, renderConfigTables } from 'src/config/define.js';
import { databaseSection } from 'src/database/database.config.js';
import { apiKeysSection } from 'src/modules/auth/api-keys/api-keys.config.js';
import { oauthSection } from 'src/modules/auth/oauth/oauth.config.js';
import { rateLimitsSection } from 'src/modules/auth/rate-limits/rate-limits.config.js';
import { sessionsSection } from 'src/modules/auth/sessions/sessions.config.js';
import { signInSection } from 'src/modules/auth/sessions/sign-in.config.js';
import { chunkIndexSection } from 'src/modules/chunk-index/chunk-index.config.js';
import { embeddingsSection } from 'src/modules/embeddings/embeddings.config.js';
import { ocrSection } from 'src/modules/ingestion/extraction/ocr.config.js';
import { ingestionSection } from 'src/modules/ingestion/ingestion.config.js';
import { mcpSection } from 'src/modules/mcp/mcp.config.js';
import { rerankSection } from 'src/modules/search/rerank/rerank.config.js';
import { searchSection } from 'src/modules/search/search.config.js';
import { webhooksSection } from 'src/modules/webhooks/webhooks.config.js';

/**
 * Every module's configuration section, in the README's order. The service's whole configuration is
 * read from the environment once at boot, from these declarations alone.
 */
export const SECTIONS = {
  core: coreSection,
  http: httpSection,
  logging: loggingSection,
  database: databaseSection,
  redis: redisSection,
  queue: queueSection,
  idempotency: idempotencySection,
  rateLimits: rateLimitsSection,
  apiKeys: apiKeysSection,
  sessions: sessionsSection,
  signIn: signInSection,
  oauth: oauthSection,
  mcp: mcpSection,
  webhooks: webhooksSection,
  embeddings: embeddingsSection,
  ingestion: ingestionSection,
  ocr: ocrSection,
  chunkIndex: chunkIndexSection,
  search: searchSection,
  rerank: rerankSection,
};

export type Configuration = Composed<typeof SECTIONS>;

/**
 * Checks every variable and throws one ConfigError that names each bad one, so that an operator
 * fixes a broken deployment in one pass. The entry points pass `process.env`.
 */
export function loadConfiguration(env: Env): Configuration {
  return readConfig(SECTIONS, env);
}

/** One provider per section, injectable as `@Inject(SEARCH_CONFIG)` and the like. */
export function configModule(config: Configuration) {
  return ConfigModule.forRoot(SECTIONS, config);
}

/** The README's tables of variables (section Configuration), made from the declarations. */
export function configTable(): string {
  return renderConfigTables(Object.values(SECTIONS));
}
