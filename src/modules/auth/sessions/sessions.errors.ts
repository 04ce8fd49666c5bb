import { AppError } from 'src/common/errors/app-error.js';

export const SessionErrors = {
  invalidCredentials: () => new AppError(401, 'invalid_credentials', 'The email or the password is wrong'),
  sessionRequired: () =>
    new AppError(401, 'authentication_required', 'Sign in first: this route needs a session cookie'),
  csrfRejected: (reason: string) =>
    new AppError(403, 'csrf_rejected', `Cross-site request refused: ${reason}`, { reason }),
};
