import { Module } from '@nestjs/common';
import { AuthorizationService } from 'src/modules/auth/oauth/authorization.service.js';
import { AuthorizeController } from 'src/modules/auth/oauth/authorize.controller.js';
import { DatasetDirectorySeam } from 'src/modules/auth/oauth/dataset-directory.seam.js';
import { OAuthClientsModule } from 'src/modules/auth/oauth/clients/oauth-clients.module.js';
import { OAuthGrantsModule } from 'src/modules/auth/oauth/grants/oauth-grants.module.js';
import { OAuthController } from 'src/modules/auth/oauth/oauth.controller.js';
import { RegistrationThrottle } from 'src/modules/auth/oauth/registration-throttle.js';
import { TokensService } from 'src/modules/auth/oauth/tokens.service.js';
import { SessionsModule } from 'src/modules/auth/sessions/sessions.module.js';

/**
 * The OAuth 2.1 authorization server for MCP clients and other apps acting for a person, and the
 * verifier of its access tokens (the OAuth tier).
 */
@Module({
  imports: [SessionsModule, OAuthClientsModule, OAuthGrantsModule],
  controllers: [OAuthController, AuthorizeController],
  providers: [AuthorizationService, RegistrationThrottle, TokensService, DatasetDirectorySeam],
  exports: [TokensService, DatasetDirectorySeam],
})
export class OAuthModule {}
