# One image for the API, the worker and migrations; the command picks the role.
# Build stage: the dev dependencies (TypeScript) compile src/ to dist/ and stay here.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The workspaces (SDK, CLI, console) before npm ci, so it links them; the console is built here too.
COPY packages ./packages
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm run console:build

# Runtime stage: compiled JavaScript and production dependencies only (no tsx, no TypeScript).
FROM node:20-bookworm-slim
WORKDIR /app
# bubblewrap confines every tool process (SPEC S3, S8); slirp4netns connects a network-granted
# sandbox's own network namespace to the outside (never the host's loopback); util-linux's
# setpriv and prlimit (in the base image) step down to the tenant's uid and set its limits (S7).
# The worker container must be allowed to create namespaces (e.g. a seccomp profile that
# permits unshare, setns and mount) and run as root, which it leaves for every tool process;
# otherwise such calls fail closed with sandbox_unavailable.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap slirp4netns && rm -rf /var/lib/apt/lists/*
# For roles that need no root: migrations (docker-compose.yml runs them as foya). The API and the
# worker stay root: they work in workspaces owned by each tenant's uid and step down to it.
RUN useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin foya
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
# Migrations are read from drizzle/ beside package.json.
COPY drizzle ./drizzle
COPY --from=build /app/dist ./dist
# The web console's static files, served at /console (FOYA_CONSOLE_DIR's default).
COPY --from=build /app/packages/console/dist ./packages/console/dist
ENV NODE_ENV=production FOYA_HOST=0.0.0.0 PORT=8787 FOYA_WORKSPACES_DIR=/data/workspaces
EXPOSE 8787
CMD ["node", "dist/main.js"]
