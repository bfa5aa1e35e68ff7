# One image for the API, the worker and migrations; the command picks the role.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY drizzle ./drizzle
COPY src ./src
ENV NODE_ENV=production FOYA_HOST=0.0.0.0 PORT=8787 FOYA_WORKSPACES_DIR=/data/workspaces
EXPOSE 8787
CMD ["node", "--import", "tsx", "src/main.ts"]
