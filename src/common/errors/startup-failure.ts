import { AppError } from 'src/common/errors/app-error.js';

/**
 * What a process that failed to start prints: the message alone for the database out of reach (it
 * says where it looked and what to check), the stack trace for anything else, where it helps.
 */
export function startupFailure(error: unknown): string {
  if (error instanceof AppError && error.code === 'database_unreachable') {
    return `Startup failed: ${error.message}\n`;
  }
  return `Startup failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`;
}
