import { AppError } from 'src/common/errors/app-error.js';
import { shownId } from 'src/common/ids/ids.js';
import { ROLES } from 'src/modules/auth/users/roles.js';

export const UserErrors = {
  invalidEmail: () =>
    new AppError(400, 'invalid_email', 'The email must be an address such as name@example.com', {
      field: 'email',
    }),
  invalidPassword: (issue: string) =>
    new AppError(400, 'invalid_password', `The password ${issue}`, { field: 'password', issue }),
  invalidRole: (role: string) =>
    new AppError(400, 'invalid_role', `The role must be one of ${ROLES.join(', ')}, got "${role}"`, {
      field: 'role',
      allowed: ROLES,
    }),
  invalidDisplayName: () =>
    new AppError(400, 'invalid_display_name', 'The display name must be at most 200 characters', {
      field: 'display_name',
    }),
  emailTaken: (email: string) =>
    new AppError(409, 'email_taken', `A user with the email ${email} already exists`, {
      field: 'email',
      email,
    }),
  notFound: (userId: string) =>
    new AppError(404, 'user_not_found', `No user ${shownId(userId)}`, { user_id: shownId(userId) }),
};
