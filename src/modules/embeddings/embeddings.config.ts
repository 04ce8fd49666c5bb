import { join } from 'node:path';
import { NODE_ENV } from 'src/config/core.config.js';
import { bool, type ConfigOf, custom, int, oneOf, section, string, url } from 'src/config/define.js';
import { PROJECT_ROOT } from 'src/config/project-root.js';

/** CI services set `CI` (true, 1, a name); `false`, `0` or `no` says it is not one. */
const CI = custom('CI', {
  defaultText: 'unset',
  description:
    'set by CI services (any value but `false`, `0` or `no`): local models are then not downloaded unless ' +
    '`EMBEDDING_ALLOW_DOWNLOAD` says so',
  parse: (value) => value !== undefined && !/^(false|0|no)$/i.test(value),
});

export const embeddingsSection = section('EMBEDDINGS_CONFIG', {
  title: 'Embeddings and chunking',
  variables: {
    provider: oneOf('EMBEDDING_PROVIDER', ['auto', 'local', 'openai', 'none'], {
      default: 'auto',
      description: '`auto`, `local`, `openai` or `none` (see [docs/ingestion.md](docs/ingestion.md))',
    }),
    /** Null picks the provider's default. */
    model: string('EMBEDDING_MODEL', {
      defaultText: "provider's default",
      description:
        '`Xenova/bge-small-en-v1.5` (local) or `text-embedding-3-small` (openai); with `local`, a static Model2Vec ' +
        'model too, such as `minishlab/potion-base-8M` (a table lookup per token: docs/ingestion.md)',
    }),
    /** OpenAI models that support shortening; null keeps the model's own. */
    dimensions: int('EMBEDDING_DIMENSIONS', {
      min: 1,
      max: 16_000,
      defaultText: "model's own",
      description: 'output dimensions for OpenAI models that can shorten them',
    }),
    previousProvider: oneOf('EMBEDDING_PREVIOUS_PROVIDER', ['local', 'openai'], {
      default: 'local',
      description:
        'the provider of `EMBEDDING_PREVIOUS_MODEL`: `local` or `openai` (with the same key and URL)',
    }),
    /** Null: no second model. */
    previousModel: string('EMBEDDING_PREVIOUS_MODEL', {
      description:
        'a model datasets are being moved from: searches of a dataset still of it embed their queries with it ' +
        'while its re-embedding to `EMBEDDING_MODEL` runs (docs/ingestion.md, Changing a dataset’s model)',
    }),
    previousDimensions: int('EMBEDDING_PREVIOUS_DIMENSIONS', {
      min: 1,
      max: 16_000,
      defaultText: "model's own",
      description: '`EMBEDDING_DIMENSIONS` of `EMBEDDING_PREVIOUS_MODEL`, for an OpenAI model shortened',
    }),
    reembedPollSeconds: int('REEMBED_POLL_SECONDS', {
      default: 5,
      min: 1,
      max: 3_600,
      description: 'how often a worker looks for re-embeddings of its model to build',
    }),
    modelsDir: string('MODELS_DIR', {
      default: join(PROJECT_ROOT, '.cache', 'models'),
      defaultText: '`.cache/models`',
      description: 'local models, in the layout `<dir>/<owner>/<name>/onnx/model_quantized.onnx`',
    }),
    /** Fetch a missing local model from the hub (see model-download.ts). */
    allowDownload: bool('EMBEDDING_ALLOW_DOWNLOAD', {
      // A first start gets the model as Chroma's and fastembed's do; tests and CI never reach the hub
      // unless they ask (a test pointing MODEL_HUB_URL at a fake hub).
      default: (reading) => reading.get(NODE_ENV) !== 'test' && !reading.get(CI),
      defaultText: '`true`, except with `NODE_ENV=test` or `CI` set',
      description:
        'fetch a local model (embedding or reranking) missing from `MODELS_DIR` from the hub, checked (see ' +
        'First start)',
    }),
    ci: CI,
    /** Laid out as Hugging Face's: `<hub>/<model>/resolve/<revision>/<file>`. */
    hubUrl: url('MODEL_HUB_URL', {
      protocols: ['http:', 'https:'],
      default: 'https://huggingface.co',
      description:
        'the model hub, or a mirror with its layout (`<hub>/<model>/resolve/main/<file>`) that declares each ' +
        "file's hash in its `ETag` / `X-Linked-Etag`",
    }),
    openaiApiKey: string('OPENAI_API_KEY', {
      description:
        'OpenAI or any OpenAI-compatible embeddings server: its API key (needed with `EMBEDDING_PROVIDER=openai`)',
    }),
    openaiBaseUrl: url('OPENAI_BASE_URL', {
      protocols: ['http:', 'https:'],
      description: 'OpenAI or any OpenAI-compatible embeddings server: its base URL',
    }),
    batchSize: int('EMBEDDING_BATCH_SIZE', {
      default: 16,
      min: 1,
      max: 2048,
      description:
        'passages per call of the local model; full batches of 16 chunks of 512 tokens take a process with a 12-layer ' +
        'model to 1.6 GB (docs/benchmarks.md)',
    }),
    /** A remote provider's requests gather the passages of every document the process embeds at once. */
    requestBatch: int('EMBEDDING_REQUEST_BATCH', {
      default: 256,
      min: 1,
      max: 2048,
      description:
        'passages per request to an OpenAI-compatible server, from all the documents a process embeds at once ' +
        '(fewer past `EMBEDDING_REQUEST_TOKENS`, or once the server refused a batch as too large)',
    }),
    requestTokens: int('EMBEDDING_REQUEST_TOKENS', {
      default: 200_000,
      min: 1,
      max: 10_000_000,
      description:
        "estimated tokens per request to an OpenAI-compatible server, under OpenAI's 300,000 with a margin " +
        '(a longer passage goes alone)',
    }),
    requestConcurrency: int('EMBEDDING_REQUEST_CONCURRENCY', {
      default: 4,
      min: 1,
      max: 64,
      description: "passages' requests a process has in flight to an OpenAI-compatible server",
    }),
    /** Then the batch fails as any transient error, for Bull to retry its documents. */
    rateLimitWaitSeconds: int('EMBEDDING_RATE_LIMIT_WAIT_SECONDS', {
      default: 120,
      min: 0,
      // Well within the 10 minutes the queue gives an attempt.
      max: 300,
      description:
        "how long a passages' request waits out an OpenAI-compatible server's 429 answers before it fails " +
        '(the documents are then retried as after any transient failure)',
    }),
    chunkTokens: int('CHUNK_TOKENS', {
      default: 512,
      min: 16,
      max: 8192,
      description:
        "chunk size, in the model's tokens (at most the model's window less two); with " +
        '`CHUNK_OVERLAP_TOKENS`, the defaults keep keyword quality at that of whole documents (docs/search.md)',
    }),
    chunkOverlapTokens: int('CHUNK_OVERLAP_TOKENS', {
      default: 32,
      min: 0,
      max: 1024,
      description: "overlap of consecutive chunks, in the model's tokens",
    }),
  },
  derive: ({ ci: _ci, hubUrl, ...values }) => ({ ...values, hubUrl: hubUrl.replace(/\/+$/, '') }),
  check: (config, reading) => {
    if (config.provider === 'openai' && !config.openaiApiKey) {
      reading.problem('EMBEDDING_PROVIDER=openai needs OPENAI_API_KEY');
    }
    if (config.previousModel && config.previousProvider === 'openai' && !config.openaiApiKey) {
      reading.problem('EMBEDDING_PREVIOUS_PROVIDER=openai needs OPENAI_API_KEY');
    }
  },
});

export const EMBEDDINGS_CONFIG = embeddingsSection.token;
export type EmbeddingsConfig = ConfigOf<typeof embeddingsSection>;
export type EmbeddingProviderName = EmbeddingsConfig['provider'];
