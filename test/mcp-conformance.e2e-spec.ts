import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createDataset } from './utils/documents.js';
import { startTestApp, type TestApp } from './utils/test-app.js';

const run = promisify(execFile);
const CONFORMANCE = 'node_modules/@modelcontextprotocol/conformance/dist/index.js';

/**
 * The scenarios of the official suite that apply to this server. The others need the suite's own
 * test tools, resources and prompts (`test_simple_text`, `test://static-text`, ...), or features a
 * stateless search server does not offer (logging, completions, sessions with SSE streams,
 * sampling, elicitation): docs/mcp.md lists them.
 */
const SCENARIOS = [
  'server-initialize',
  'ping',
  'tools-list',
  'resources-list',
  'prompts-list',
  'dns-rebinding-protection',
];

describe('MCP conformance suite (@modelcontextprotocol/conformance)', () => {
  let t: TestApp;
  let url: string;

  beforeAll(async () => {
    t = await startTestApp();
    const key = await t.createApiKey();
    // The suite's client sends no credentials: a public dataset's endpoint needs none.
    url = `${t.url}/v1/mcp/datasets/${await createDataset(t.http, key, { is_public: true })}`;
  });
  afterAll(() => t.close());

  it.each(SCENARIOS)('passes %s', async (scenario) => {
    const { stdout, stderr } = await run(
      process.execPath,
      [CONFORMANCE, 'server', '--url', url, '--scenario', scenario],
      {
        timeout: 60_000,
      },
    ).catch((error: { stdout: string; stderr: string }) => {
      throw new Error(`${scenario} failed:\n${error.stdout}\n${error.stderr}`);
    });
    expect(`${stdout}${stderr}`).toMatch(/Passed: ([1-9]\d*)\/\1, 0 failed, 0 warnings/);
  });
});
