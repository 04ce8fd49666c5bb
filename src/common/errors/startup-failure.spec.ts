import { AppError } from 'src/common/errors/app-error.js';
import { startupFailure } from 'src/common/errors/startup-failure.js';

describe('startupFailure', () => {
  it('prints the database out of reach as its sentence, without a stack trace', () => {
    const error = new AppError(503, 'database_unreachable', 'Cannot connect to PostgreSQL at db:5432');
    expect(startupFailure(error)).toBe('Startup failed: Cannot connect to PostgreSQL at db:5432\n');
  });

  it('keeps the stack trace of any other error, an AppError too', () => {
    const other = new AppError(400, 'embedding_unavailable', 'No embedding provider is configured');
    expect(startupFailure(other)).toContain('No embedding provider is configured');
    expect(startupFailure(other)).toContain('    at ');
    expect(startupFailure(new Error('boom'))).toMatch(/^Startup failed: Error: boom\n {4}at /);
    expect(startupFailure('plain')).toBe('Startup failed: plain\n');
  });
});
