// Runs graphql-http's GraphQL-over-HTTP audit against the endpoint whose URL
// is the first argument, and prints its results as a JSON array on stdout:
// one object per audit, with its id, name (which starts with MUST, SHOULD or
// MAY), status ("ok", "notice", "warn" or "error") and, when it did not
// pass, the reason and the status and Content-Type of the response.
// graph's TestGraphQLOverHTTPAudit runs it (`npm ci` here first).
import { auditServer } from 'graphql-http';

const url = process.argv[2];
if (!url) {
  console.error('usage: node audit.mjs URL');
  process.exit(2);
}

const results = await auditServer({ url });
const out = [];
for (const r of results) {
  const o = { id: r.id, name: r.name, status: r.status };
  if (r.status !== 'ok') {
    o.reason = r.reason;
    if (r.response) {
      o.httpStatus = r.response.status;
      o.contentType = r.response.headers.get('content-type');
      try {
        o.body = (await r.response.text()).slice(0, 500);
      } catch {
        // The audit already read the body.
      }
    }
  }
  out.push(o);
}
process.stdout.write(JSON.stringify(out, null, 2) + '\n');
