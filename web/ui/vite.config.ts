// Vite configuration of the scorch web UI. The output is embedded into the scorch binary
// (scripts/embed.sh) and served under /ui/ (src/server/ui.c); nothing is loaded from the network.
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/ui/',
  build: {
    target: 'es2020',
    sourcemap: false,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    chunkSizeWarningLimit: 1024,
  },
});
