# One image for the Server and the Computer (and the Agent CLI): the built packages on plain
# node, production dependencies only. docs/deploy.md has the minimal `docker run`.
#
# Stage `build` installs everything, builds the packages (npm run build) and stages the
# production tree (scripts/stage-runtime.ts: package.json, the lockfile and, per package,
# exactly what npm pack publishes). The final stage installs the lockfile's production
# dependencies into that tree: no TypeScript source, tsx or dev tool reaches it. Stage `demo`
# is built only when asked (docker-compose.yml's demo data writer and scripted Agent): the
# whole checkout, running scripts/ through tsx.

FROM node:20-bookworm-slim AS build
WORKDIR /build
# Manifests first, so source edits do not reinstall the dependencies.
COPY package.json package-lock.json ./
COPY protocol/package.json protocol/
COPY agent/package.json agent/
COPY server/package.json server/
COPY computer/package.json computer/
RUN npm ci --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json tsconfig.build.json ./
COPY protocol protocol
COPY agent agent
COPY server server
COPY computer computer
COPY scripts scripts
RUN npm run build \
 && node --conditions=@a2c-smcp/source --import tsx scripts/stage-runtime.ts /runtime

FROM build AS demo
ENV A2C_LOG_LEVEL=info
RUN mkdir -p /demo && chown node:node /demo
USER node

FROM node:20-bookworm-slim AS runtime
# The bins are plain node with the process tuning in their shebang (docs/configuration.md,
# "Process tuning"). Inside a container the Server listens on every interface; run directly,
# its default stays 127.0.0.1.
ENV NODE_ENV=production \
    A2C_HOST=0.0.0.0 \
    A2C_LOG_LEVEL=info \
    PATH=/app/node_modules/.bin:$PATH
WORKDIR /app
COPY --from=build /runtime/ ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force \
 && mkdir -p /state /demo \
 && chown node:node /state /demo
USER node
EXPOSE 7100
# No curl in slim images: node's fetch. A Computer container sets A2C_HTTP_PORT (its /healthz
# answers 200 once joined); a Server's /healthz is on A2C_PORT.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.A2C_HTTP_PORT || process.env.A2C_PORT || 7100) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["a2c-server"]
