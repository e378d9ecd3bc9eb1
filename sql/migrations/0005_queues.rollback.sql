DROP TABLE flowforge.queue;
