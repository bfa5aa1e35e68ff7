# One image for the API, the worker and migrations; the command picks the role.
FROM node:20-bookworm-slim
WORKDIR /app
# bubblewrap confines every tool process (SPEC S3, S8); slirp4netns connects a network-granted
# sandbox's own network namespace to the outside (never the host's loopback); util-linux's
# setpriv and prlimit (in the base image) step down to the tenant's uid and set its limits (S7).
# The worker container must be allowed to create namespaces (e.g. a seccomp profile that
# permits unshare, setns and mount) and run as root, which it leaves for every tool process;
# otherwise such calls fail closed with sandbox_unavailable.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap slirp4netns && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY drizzle ./drizzle
COPY src ./src
ENV NODE_ENV=production FOYA_HOST=0.0.0.0 PORT=8787 FOYA_WORKSPACES_DIR=/data/workspaces
EXPOSE 8787
CMD ["node", "--import", "tsx", "src/main.ts"]
