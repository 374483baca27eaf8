// The stakegraph playground: GraphiQL with an API key field. Everything it
// needs is bundled into dist/index.html by build.mjs, so it works offline.
import React, { useEffect, useMemo, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { GraphiQL } from 'graphiql';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import 'graphiql/graphiql.css';
import './playground.css';

// The page is served by the GraphQL endpoint itself, so queries go to the
// URL the page came from.
const endpoint = window.location.pathname;
const keyStorage = 'stakegraph:apiKey';

const defaultQuery = `# Welcome to the stakegraph GraphQL playground.
# Enter your API key above, then run a query with Ctrl-Enter.
# The Docs panel (top left) describes every type and field.

query TopAVS {
  avsList(sortByTvl: desc, take: 5) {
    data {
      address
      metadataName
      totalOperators
      tvl { tvl }
      operators(take: 3, sortByTvl: desc) {
        data { address metadataName }
      }
    }
    meta { total skip take }
  }
}
`;

function Playground() {
  const [apiKey, setApiKey] = useState(() => window.localStorage.getItem(keyStorage) || '');
  const [draft, setDraft] = useState(apiKey);
  // A new fetcher for a new key makes GraphiQL read the schema again. The
  // key is taken on Enter, on leaving the field, or after a pause in typing,
  // not on every keystroke.
  const fetcher = useMemo(
    () => createGraphiQLFetcher({ url: endpoint, headers: apiKey ? { 'X-API-Token': apiKey } : {} }),
    [apiKey],
  );
  const apply = (value) => {
    const key = value.trim();
    if (key === apiKey) return;
    window.localStorage.setItem(keyStorage, key);
    setApiKey(key);
  };
  useEffect(() => {
    const timer = setTimeout(() => apply(draft), 800);
    return () => clearTimeout(timer);
  }, [draft]);
  return (
    <div className="sg-root">
      <header className="sg-bar">
        <span className="sg-title">stakegraph</span>
        <label className="sg-key">
          API key (sent as X-API-Token)
          <input
            id="api-key"
            type="password"
            autoComplete="off"
            spellCheck="false"
            placeholder="paste your API key"
            value={draft}
            onChange={(e) => setDraft(e.target.value)}
            onBlur={() => apply(draft)}
            onKeyDown={(e) => e.key === 'Enter' && apply(draft)}
          />
        </label>
        <span id="api-key-state" className="sg-state">{apiKey ? 'key set' : 'no key'}</span>
      </header>
      <div className="sg-graphiql">
        <GraphiQL key={apiKey} fetcher={fetcher} defaultQuery={defaultQuery} shouldPersistHeaders={false} />
      </div>
    </div>
  );
}

createRoot(document.getElementById('root')).render(<Playground />);
