import { webhookUrlIssue } from 'src/modules/webhooks/webhook-url.js';

const dev = { production: false };
const prod = { production: true };

describe('webhookUrlIssue', () => {
  it('takes HTTPS anywhere, and plain HTTP only to this machine outside production', () => {
    expect(webhookUrlIssue('https://hooks.example.com/in?x=1', prod)).toBeNull();
    expect(webhookUrlIssue('http://127.0.0.1:8080/hook', dev)).toBeNull();
    expect(webhookUrlIssue('http://localhost/hook', dev)).toBeNull();
    expect(webhookUrlIssue('http://[::1]:9/hook', dev)).toBeNull();
    expect(webhookUrlIssue('http://localhost/hook', prod)).toContain('https');
    expect(webhookUrlIssue('http://hooks.example.com/', dev)).toContain('localhost');
  });

  it.each([
    ['not a url', 'absolute URL'],
    ['ftp://example.com/x', 'https'],
    ['https://user:secret@example.com/', 'credentials'],
    [`https://example.com/${'a'.repeat(2040)}`, '2,048'],
  ])('refuses %s', (url, issue) => {
    expect(webhookUrlIssue(url, dev)).toContain(issue);
  });
});
