import { readSection } from 'src/config/define.js';
import { loggingSection } from 'src/common/logging/logging.config.js';
import { logFormat } from 'src/common/logging/logger.js';

describe('logFormat', () => {
  const format = (env: Record<string, string>, tty: boolean) =>
    logFormat(readSection(loggingSection, env), tty);

  it('prints readable lines in development on a terminal', () => {
    expect(format({}, true)).toBe('pretty');
    expect(format({ NODE_ENV: 'development' }, true)).toBe('pretty');
  });

  it('prints JSON lines when the output is not a terminal, in production and in tests', () => {
    expect(format({}, false)).toBe('json');
    expect(format({ NODE_ENV: 'production', PUBLIC_BASE_URL: 'https://x.example' }, true)).toBe('json');
    expect(format({ NODE_ENV: 'test' }, true)).toBe('json');
  });

  it('does as LOG_FORMAT says, whatever the environment and the output', () => {
    expect(format({ LOG_FORMAT: 'json' }, true)).toBe('json');
    expect(
      format({ LOG_FORMAT: 'pretty', NODE_ENV: 'production', PUBLIC_BASE_URL: 'https://x.example' }, false),
    ).toBe('pretty');
  });

  it('refuses any other LOG_FORMAT', () => {
    expect(() => readSection(loggingSection, { LOG_FORMAT: 'yaml' })).toThrow(
      'LOG_FORMAT must be one of json, pretty, got "yaml"',
    );
  });
});
