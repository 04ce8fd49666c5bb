// The path src/database/entities.ts imports the entity by; the entity is the API keys module's.
export { ApiKeyEntity } from 'src/modules/auth/api-keys/api-key.entity.js';
