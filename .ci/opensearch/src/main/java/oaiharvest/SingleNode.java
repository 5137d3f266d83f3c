package oaiharvest;

import static org.codelibs.opensearch.runner.OpenSearchRunner.newConfigs;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

import org.codelibs.opensearch.runner.OpenSearchRunner;
import org.opensearch.Version;

/**
 * One real OpenSearch node on 127.0.0.1, for the tests and for `./run.sh opensearch`.
 *
 * <p>Arguments: {@code HTTP_PORT TRANSPORT_PORT}. Prints {@code READY <url> <version>} once the
 * node answers and indices need no replica (a single node otherwise leaves every index yellow),
 * runs until it is stopped (Ctrl-C, SIGTERM) and then removes its data folder.
 */
public final class SingleNode {

    private SingleNode() {
    }

    public static void main(final String[] args) throws Exception {
        final int httpPort = args.length > 0 ? Integer.parseInt(args[0]) : 9200;
        final int transportPort = args.length > 1 ? Integer.parseInt(args[1]) : 9400;
        final Path home = Files.createTempDirectory("oaiharvest-opensearch-");

        final OpenSearchRunner runner = new OpenSearchRunner();
        // The runner would probe for a free port up to 9299 and refuse one above; ours is given.
        runner.setMaxHttpPort(-1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(runner, home)));
        runner.onBuild((number, settings) -> {
            settings.put("http.port", httpPort);
            settings.put("transport.port", transportPort);
            settings.put("network.host", "127.0.0.1");
            settings.put("discovery.type", "single-node");
            // The disk of a development machine or a CI runner is often fuller than the
            // watermarks allow; a test node must not turn its indices read-only for that.
            settings.put("cluster.routing.allocation.disk.threshold_enabled", false);
            settings.put("action.auto_create_index", true);
        }).build(newConfigs().basePath(home.toString()).numOfNode(1).baseHttpPort(httpPort - 1)
                .clusterName("oaiharvest-test").disableESLogger());

        // A node setting is ignored for this one in 2.19: it must be a cluster setting.
        final HttpResponse<String> response = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/_cluster/settings"))
                        .header("Content-Type", "application/json")
                        .PUT(HttpRequest.BodyPublishers.ofString(
                                "{\"persistent\": {\"cluster.default_number_of_replicas\": 0}}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IllegalStateException("cluster settings refused: " + response.body());
        }
        runner.ensureYellow();
        System.out.println("READY http://127.0.0.1:" + httpPort + " opensearch " + Version.CURRENT);
        System.out.flush();
        Thread.currentThread().join();
    }

    private static void stop(final OpenSearchRunner runner, final Path home) {
        try {
            runner.close();
        } catch (final IOException | RuntimeException e) {
            System.err.println("closing the node: " + e);
        }
        try (Stream<Path> paths = Files.walk(home)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (final IOException e) {
            System.err.println("removing " + home + ": " + e);
        }
    }
}
