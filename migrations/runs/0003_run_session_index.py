"""The run's session foreign key loses its own index: (session, -created_at) serves every
lookup by session, including the cascade of a deleted session. Dropped by name: Django's own
AlterField would also drop run_one_active_per_session, a partial unique index on the column."""

import django.db.models.deletion
from django.db import migrations, models

INDEX = "runs_session_id_d6689c7b"  # Django's name for the foreign key's index


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0002_session_summary_session_summary_seq_sessionfile'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(f"DROP INDEX IF EXISTS {INDEX}",
                                  reverse_sql=f"CREATE INDEX {INDEX} ON runs (session_id)"),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name='run',
                    name='session',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='runs.session'),
                ),
            ],
        ),
    ]
