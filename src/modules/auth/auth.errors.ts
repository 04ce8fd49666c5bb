import { AppError } from 'src/common/errors/app-error.js';

export const AuthErrors = {
  invalidAccountName: () =>
    new AppError(400, 'invalid_account_name', 'The account name must be 1-200 characters', {
      field: 'account',
    }),
  accountNotFound: (name: string) =>
    new AppError(404, 'account_not_found', `No account named "${name}"`, { account: name }),
  apiKeyNotFound: (keyId: string) =>
    new AppError(404, 'api_key_not_found', `No active API key ${keyId}`, { key_id: keyId }),
};
