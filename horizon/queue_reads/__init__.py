"""What the dashboard and the metrics exporter both read about queues: which queues
exist, what each holds now, and which connections could not be read. Below both
horizon/dashboard/ and horizon/prometheus.py, so the exporter imports nothing
of the dashboard's."""
