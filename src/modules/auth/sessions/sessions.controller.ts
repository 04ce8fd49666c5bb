import { Body, Controller, Delete, Get, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { ApiErrors } from 'src/common/http/api-errors.decorator.js';
import { Created } from 'src/common/http/created.decorator.js';
import { CORE_CONFIG, type CoreConfig } from 'src/config/core.config.js';
import { SESSIONS_CONFIG, type SessionsConfig } from 'src/modules/auth/sessions/sessions.config.js';
import { Public, SignedIn } from 'src/modules/auth/auth.decorators.js';
import { allowedOrigins, crossSiteIssue } from 'src/modules/auth/sessions/csrf.js';
import { signInBrowser } from 'src/modules/auth/sessions/browser-sign-in.js';
import { clearSessionCookie } from 'src/modules/auth/sessions/session-cookie.js';
import { SessionResponseDto, SignInDto } from 'src/modules/auth/sessions/session.dto.js';
import { SessionErrors } from 'src/modules/auth/sessions/sessions.errors.js';
import { SessionsService, toSessionResponse } from 'src/modules/auth/sessions/sessions.service.js';

/** Signing in and out of the Session tier, for web apps; docs/auth.md shows its use. */
@ApiTags('auth')
@Controller('v1/auth/session')
export class SessionsController {
  constructor(
    private readonly sessions: SessionsService,
    @Inject(CORE_CONFIG) private readonly core: CoreConfig,
    @Inject(SESSIONS_CONFIG) private readonly config: SessionsConfig,
  ) {}

  @Post()
  @Created(SessionResponseDto, '/v1/auth/session')
  @Public()
  @ApiOperation({
    operationId: 'signIn',
    summary: 'Sign in',
    description:
      'Checks the email and password and sets the session cookie (`__Host-svc_session`; `svc_session` on a ' +
      'development server over HTTP). Failed attempts are limited per client address and per email.',
  })
  @ApiErrors([400, 401, 403, 429], {
    400: ['validation_error'],
    401: ['invalid_credentials'],
    403: ['csrf_rejected'],
  })
  async signIn(
    @Body() body: SignInDto,
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ): Promise<SessionResponseDto> {
    // A page of another site must not sign its visitor in to an account of its choosing.
    const issue = crossSiteIssue(request, allowedOrigins(request, this.config, this.core), {
      anonymous: true,
    });
    if (issue) throw SessionErrors.csrfRejected(issue);
    const signedIn = await signInBrowser(this.sessions, this.config, { request, response }, body);
    response.setHeader('Cache-Control', 'no-store');
    return toSessionResponse(signedIn);
  }

  @Get()
  @SignedIn()
  @ApiOperation({ operationId: 'getSession', summary: 'The signed-in user and when the session ends' })
  @ApiOkResponse({ type: SessionResponseDto })
  @ApiErrors([401, 429], { 401: ['invalid_session'] })
  current(@Req() request: Request, @Res({ passthrough: true }) response: Response): SessionResponseDto {
    response.setHeader('Cache-Control', 'no-store');
    return toSessionResponse(request.signedIn!);
  }

  @Delete()
  @HttpCode(204)
  @SignedIn()
  @ApiOperation({ operationId: 'signOut', summary: 'Sign out: ends the session and clears its cookie' })
  @ApiNoContentResponse({ description: 'Signed out' })
  @ApiErrors([401, 403, 429], { 401: ['invalid_session'], 403: ['csrf_rejected'] })
  async signOut(@Req() request: Request, @Res({ passthrough: true }) response: Response): Promise<void> {
    await this.sessions.signOut(request.signedIn!.cookie);
    clearSessionCookie(response, this.config.secureCookie);
  }
}
