import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import { connectBridge } from './bridge/connect.js';
import { BridgeProvider } from './bridge/context.js';
import './styles.css';

const { client, kind } = await connectBridge(window.location);
document.documentElement.dataset.shell = kind;

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <BridgeProvider client={client} kind={kind}>
      <App />
    </BridgeProvider>
  </StrictMode>,
);
