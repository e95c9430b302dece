# One image for every role of the stack: the Server, a Computer (with the demo MCP server) and the
# scripted Agent. TypeScript runs through tsx, so there is no build step. See docs/stack.md.
FROM node:20-bookworm-slim

WORKDIR /app
ENV NODE_ENV=production \
    A2C_LOG_LEVEL=info

# Dependencies first, so source edits do not reinstall them. tsx, yaml and the MCP SDK are
# runtime dependencies; dev tools (eslint, typescript, benches) stay out of the image.
COPY package.json package-lock.json tsconfig.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY protocol ./protocol
COPY server ./server
COPY computer ./computer
COPY agent ./agent
COPY scripts ./scripts

# Demo data and Computer state live in volumes owned by the unprivileged user.
RUN mkdir -p /demo /state && chown node:node /demo /state
USER node

EXPOSE 7100
CMD ["node", "--import", "tsx", "server/main.ts"]
