// Generates a TypeScript client of the served API with Hey API: `node generate.mjs <document URL> <dir>`.
// Calls that fail throw (`throwOnError`), so that a result's `data` is typed as present.
import { createClient } from '@hey-api/openapi-ts';

const [input, output] = process.argv.slice(2);
await createClient({
  input,
  output,
  logs: { level: 'silent' },
  plugins: ['@hey-api/typescript', '@hey-api/sdk', { name: '@hey-api/client-fetch', throwOnError: true }],
});
