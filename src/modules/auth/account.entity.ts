// The path src/database/entities.ts imports the entity by; the entity is the accounts module's.
export { AccountEntity } from 'src/modules/auth/accounts/account.entity.js';
