import { QueryFailedError } from 'typeorm';
import { isUniqueViolation } from 'src/database/unique-violation.js';

function failure(driverError: Record<string, unknown>): QueryFailedError {
  return new QueryFailedError(
    'INSERT ...',
    [],
    Object.assign(new Error(String(driverError.message)), driverError),
  );
}

describe('isUniqueViolation', () => {
  it('matches the constraint PostgreSQL names', () => {
    const error = failure({ code: '23505', constraint: 'users_email_idx', message: 'duplicate key' });
    expect(isUniqueViolation(error, 'users_email_idx')).toBe(true);
    expect(isUniqueViolation(error, 'datasets_account_name_key')).toBe(false);
  });

  it('matches a Citus shard’s copy, named only in the message', () => {
    const error = failure({
      code: '23505',
      message: 'duplicate key value violates unique constraint "datasets_account_name_key_102010"',
    });
    expect(isUniqueViolation(error, 'datasets_account_name_key')).toBe(true);
    expect(isUniqueViolation(error, 'datasets_account')).toBe(false);
  });

  it('is false for other errors', () => {
    expect(
      isUniqueViolation(failure({ code: '23503', constraint: 'users_email_idx' }), 'users_email_idx'),
    ).toBe(false);
    expect(isUniqueViolation(new Error('users_email_idx'), 'users_email_idx')).toBe(false);
  });
});
