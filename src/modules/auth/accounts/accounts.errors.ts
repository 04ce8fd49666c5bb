import { AppError } from 'src/common/errors/app-error.js';

export const AccountErrors = {
  invalidName: () =>
    new AppError(400, 'invalid_account_name', 'The account name must be 1-200 characters', {
      field: 'account',
    }),
  notFound: (name: string) =>
    new AppError(404, 'account_not_found', `No account named "${name}"`, { account: name }),
};
