import { type ConfigOf, int, oneOf, section, string, url } from 'src/config/define.js';

const RERANK_MODEL = string('RERANK_MODEL', {
  default: 'Xenova/ms-marco-MiniLM-L-6-v2',
  defaultText: '`Xenova/ms-marco-MiniLM-L-6-v2` (`local`; required for `http`)',
  description: "the reranker's model: in `MODELS_DIR` (`local`), or the API's model name (`http`)",
});

export const rerankSection = section('RERANK_CONFIG', {
  title: 'Reranking',
  variables: {
    provider: oneOf('RERANK_PROVIDER', ['none', 'local', 'http'], {
      default: 'none',
      description: '`none`, `local` (cross-encoder in process) or `http` (Cohere-compatible API)',
    }),
    model: RERANK_MODEL,
    baseUrl: url('RERANK_BASE_URL', {
      protocols: ['http:', 'https:'],
      description: "the rerank API's base URL (`http`)",
    }),
    apiKey: string('RERANK_API_KEY', { description: "the rerank API's key (`http`)" }),
    candidates: int('RERANK_CANDIDATES', {
      default: 20,
      min: 1,
      max: 200,
      description: 'fused candidates the reranker sees',
    }),
  },
  check: (config, reading) => {
    if (config.provider === 'http' && !config.baseUrl) {
      reading.problem('RERANK_PROVIDER=http needs RERANK_BASE_URL');
    }
    if (config.provider === 'http' && !reading.isSet(RERANK_MODEL)) {
      // The default names the local cross-encoder, which no rerank API knows: every search would fail.
      reading.problem('RERANK_PROVIDER=http needs RERANK_MODEL, a model name the rerank API accepts');
    }
  },
});

export const RERANK_CONFIG = rerankSection.token;
export type RerankConfig = ConfigOf<typeof rerankSection>;
