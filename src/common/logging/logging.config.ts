import { NODE_ENV } from 'src/config/core.config.js';
import { type ConfigOf, oneOf, section } from 'src/config/define.js';

export const loggingSection = section('LOGGING_CONFIG', {
  title: 'Logging',
  variables: {
    level: oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      default: (reading) => (reading.get(NODE_ENV) === 'test' ? 'silent' : 'info'),
      defaultText: '`info` (`silent` in test)',
      description: 'pino level',
    }),
    /** Null: readable lines in development on a terminal, JSON lines otherwise (see logger.ts). */
    format: oneOf('LOG_FORMAT', ['json', 'pretty'], {
      defaultText: '`pretty` in development on a terminal, else `json`',
      description:
        '`json`: one JSON object per line (pino), for log collectors; `pretty`: readable coloured lines ' +
        '(pino-pretty)',
    }),
  },
  // LOG_FORMAT's default depends on NODE_ENV and on whether stdout is a terminal, which logger.ts sees.
  derive: (values, reading) => ({ ...values, nodeEnv: reading.get(NODE_ENV) }),
});

export const LOGGING_CONFIG = loggingSection.token;
export type LoggingConfig = ConfigOf<typeof loggingSection>;
