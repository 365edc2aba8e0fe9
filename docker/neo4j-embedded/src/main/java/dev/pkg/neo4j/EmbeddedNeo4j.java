package dev.pkg.neo4j;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;

import sun.misc.Signal;

/**
 * Runs a Neo4j Community DBMS in-process with only the Bolt connector, for tests and CI.
 *
 * <p>Usage: {@code EmbeddedNeo4j --home DIR --port N}. Prints {@code READY bolt://127.0.0.1:N}
 * once the default database is available; SIGTERM/SIGINT shut the DBMS down cleanly and exit 0.
 * Auth is off unless the environment variable {@value #PASSWORD_ENV} is set: then it is on, as in
 * the Docker image, and the user {@code neo4j} has that password.
 */
public final class EmbeddedNeo4j {
    private static final String HOST = "127.0.0.1";
    private static final Duration START_TIMEOUT = Duration.ofMinutes(3);
    /** Read from the environment, not the command line, so that it does not show in process lists. */
    private static final String PASSWORD_ENV = "PKG_NEO4J_PASSWORD";
    private static final String SET_PASSWORD = "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED";

    private static DatabaseManagementService dbms;

    private EmbeddedNeo4j() {}

    public static void main(String[] args) throws InterruptedException {
        Path home = null;
        Integer port = null;
        for (int i = 0; i < args.length; i++) {
            String value = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--home" -> {
                    if (value == null) usage("--home needs a directory");
                    home = Path.of(value).toAbsolutePath();
                    i++;
                }
                case "--port" -> {
                    port = parsePort(value);
                    i++;
                }
                case "-h", "--help" -> usage(null);
                default -> usage("unknown argument: " + args[i]);
            }
        }
        if (home == null || port == null) usage("--home and --port are required");

        // Take over SIGTERM/SIGINT so a requested stop is a clean shutdown with exit code 0;
        // the shutdown hook covers every other way the JVM may exit.
        CountDownLatch stopRequested = new CountDownLatch(1);
        onSignal("TERM", stopRequested);
        onSignal("INT", stopRequested);
        Runtime.getRuntime().addShutdownHook(new Thread(EmbeddedNeo4j::shutdown, "neo4j-shutdown"));

        try {
            start(home, port, System.getenv(PASSWORD_ENV));
        } catch (Exception | LinkageError e) {
            System.err.println("ERROR: Neo4j failed to start: " + e);
            for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
                System.err.println("  caused by: " + c);
            }
            shutdown();
            System.exit(1);
        }
        System.out.println("READY bolt://" + HOST + ":" + port);
        System.out.flush();

        stopRequested.await();
        System.exit(shutdown() ? 0 : 1);
    }

    private static void start(Path home, int port, String password) {
        dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(HOST, port))
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                // Netty's default 5 s quiet period (boss + worker groups) makes every stop take ~10 s.
                .setConfig(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0)
                .setConfig(HttpConnector.enabled, false)
                .setConfig(HttpsConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, password != null)
                .setConfig(GraphDatabaseSettings.udc_enabled, false)
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(256))
                // Small, non-preallocated transaction logs; only what recovery needs is kept.
                .setConfig(GraphDatabaseSettings.keep_logical_logs, "keep_none")
                .setConfig(GraphDatabaseSettings.logical_log_rotation_threshold, ByteUnit.mebiBytes(16))
                .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                .build();
        String name = GraphDatabaseSettings.DEFAULT_DATABASE_NAME;
        if (!dbms.database(name).isAvailable(START_TIMEOUT.toMillis())) {
            throw new IllegalStateException("database '" + name + "' not available after " + START_TIMEOUT);
        }
        if (password != null) {
            // The embedded API acts without authentication; the password then holds for Bolt clients.
            dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME)
                    .executeTransactionally(SET_PASSWORD, Map.of("password", password));
        }
    }

    /**
     * Idempotent: called from the main thread on a stop signal and again by the shutdown hook.
     * Returns false if the DBMS did not shut down cleanly.
     */
    private static synchronized boolean shutdown() {
        if (dbms == null) return true;
        System.out.println("STOPPING");
        System.out.flush();
        try {
            dbms.shutdown();
            System.out.println("STOPPED cleanly");
            return true;
        } catch (RuntimeException e) {
            System.err.println("ERROR: Neo4j shutdown failed: " + e);
            return false;
        } finally {
            dbms = null;
            System.out.flush();
        }
    }

    private static void onSignal(String name, CountDownLatch stopRequested) {
        try {
            Signal.handle(new Signal(name), s -> stopRequested.countDown());
        } catch (IllegalArgumentException ignoredSignal) {
            // The signal is ignored for this process (e.g. SIGINT of a background job): nothing to handle.
        }
    }

    private static int parsePort(String value) {
        try {
            int port = Integer.parseInt(value);
            if (port >= 1 && port <= 65535) return port;
        } catch (NumberFormatException ignored) {
            // fall through to usage
        }
        usage("--port needs a number in 1..65535, got: " + value);
        return -1; // unreachable
    }

    private static void usage(String error) {
        if (error != null) System.err.println("ERROR: " + error);
        System.err.println("usage: EmbeddedNeo4j --home DIR --port N");
        System.exit(error == null ? 0 : 2);
    }
}
